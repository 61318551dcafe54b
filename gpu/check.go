package gpu

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/gpu/internal/cudaops"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/models/optim"
)

// CheckCase is one layer the check runs on both devices: a convolution (X and W set), a max pooling (X and
// Pool set), a training-mode batch norm (X and Norm set), an op through kernels NVRTC compiles (X and Func
// "relu", "gelu", "bias", "avgpool", "crossentropy" or "mse"), a matrix product (A and B set), or SGD steps (SGD set).
type CheckCase struct {
	Name   string `json:"name"`
	X      []int  `json:"x,omitempty"`          // [N,C,H,W]
	W      []int  `json:"w,omitempty"`          // [O,C,K,K]
	Pool   int    `json:"pool,omitempty"`       // max pooling window size
	Func   string `json:"func,omitempty"`       // relu or gelu (element-wise), bias (a channel bias added), avgpool (global average pooling), crossentropy (X logits [B,K], one-hot targets) or mse (mean squared error of two X)
	Norm   bool   `json:"batch_norm,omitempty"` // batch norm of X: training mode (cuDNN), or with Eval evaluation mode (NVRTC)
	Eval   bool   `json:"eval,omitempty"`       // the batch norm in evaluation mode, from fixed running statistics
	ReLU   bool   `json:"relu,omitempty"`       // the evaluation-mode batch norm with the ReLU fused
	Stride int    `json:"stride,omitempty"`
	Pad    int    `json:"pad,omitempty"`
	A      []int  `json:"a,omitempty"` // [M,K]
	B      []int  `json:"b,omitempty"` // [K,N]
	// SGD lists the sizes of the parameters of an SGD case: Runs+1 steps of optim.SGD and of SGD (momentum
	// 0.9, weight decay 5e-4, clipping at 1) from the same weights and gradients, the weights compared after.
	SGD []int `json:"sgd,omitempty"`
}

// DefaultCheckCases are the layers `bicyc doctor --gpu` checks: a 3x3 convolution of the default convnet's
// size, ResNet-18's 7x7 stride-2 stem and a 3x3 convolution of its last stage at 224x224 and batch 64, and
// a classifier-sized matrix product, a ReLU over ResNet-18's first-stage activations and a GELU of the
// mapper's hidden layer (kernels compiled by NVRTC), and ResNet-18's 3x3 stride-2 max pooling after its
// stem, and the batch norm after it (training mode, running statistics compared too); then the NVRTC ops of
// the rest of the step: an evaluation-mode batch norm with its ReLU over first-stage activations, the
// classifier's bias and a bias over first-stage activations, the cross-entropy of 1000 classes, the mean squared
// error of ResNet-18-sized features (BiCyc's L_bi and L_cyc terms), ResNet-18's global average pooling, and SGD steps over parameters of ResNet-18's sizes (11.9 M values).
var DefaultCheckCases = []CheckCase{
	{Name: "convnet-conv3x3", X: []int{128, 32, 28, 28}, W: []int{64, 32, 3, 3}, Stride: 1, Pad: 1},
	{Name: "resnet18-stem-7x7s2-224", X: []int{64, 3, 224, 224}, W: []int{64, 3, 7, 7}, Stride: 2, Pad: 3},
	{Name: "resnet18-layer4-3x3-224", X: []int{64, 512, 7, 7}, W: []int{512, 512, 3, 3}, Stride: 1, Pad: 1},
	{Name: "matmul-512x1000", A: []int{64, 512}, B: []int{512, 1000}},
	{Name: "relu-nvrtc", X: []int{64, 64, 56, 56}, Func: "relu"},
	{Name: "gelu-nvrtc-mapper", X: []int{64, 2048}, Func: "gelu"},
	{Name: "resnet18-maxpool-3x3s2-224", X: []int{64, 64, 112, 112}, Pool: 3, Stride: 2, Pad: 1},
	{Name: "resnet18-batchnorm-224", X: []int{64, 64, 112, 112}, Norm: true},
	{Name: "resnet18-batchnorm-eval-relu-224", X: []int{64, 64, 56, 56}, Norm: true, Eval: true, ReLU: true},
	{Name: "resnet18-bias-fc", X: []int{64, 1000}, Func: "bias"},
	{Name: "crossentropy-64x1000", X: []int{64, 1000}, Func: "crossentropy"},
	{Name: "mse-features-64x512", X: []int{64, 512}, Func: "mse"},
	{Name: "resnet18-bias-conv", X: []int{64, 64, 56, 56}, Func: "bias"},
	{Name: "resnet18-avgpool", X: []int{64, 512, 7, 7}, Func: "avgpool"},
	{Name: "sgd-resnet18-sized", SGD: []int{9408, 36864, 73728, 147456, 294912, 589824, 1179648, 2359296, 2359296, 2359296, 512000, 64, 512, 1000}},
}

// CheckOptions configure Check.
type CheckOptions struct {
	Cases     []CheckCase // DefaultCheckCases if empty
	Runs      int         // timed steps per device after one untimed one; 3 if 0
	Seed      uint64
	Tolerance float64 // largest relative difference accepted; 1e-4 if 0
	// Progress, when set, gets a line before each device of each case runs, so that a crash inside a CUDA
	// library (which ends the process before the report) still shows which call was running.
	Progress io.Writer
}

// Diff compares one tensor computed on both devices.
type Diff struct {
	MaxAbs float64 `json:"max_abs_diff"`
	// MaxRel is MaxAbs divided by the largest magnitude of the CPU's tensor: a difference in the last bits
	// of a near-zero element does not count as large.
	MaxRel float64 `json:"max_rel_diff"`
}

// CaseReport is the outcome of one CheckCase.
type CaseReport struct {
	CheckCase
	Error string `json:"error,omitempty"`
	// LossCPU and LossGPU are Σ out ⊙ r for a fixed random r (so the output's gradient is r); the loss is
	// summed on the CPU in float32 in both graphs.
	LossCPU float64         `json:"loss_cpu"`
	LossGPU float64         `json:"loss_gpu,omitempty"`
	Diffs   map[string]Diff `json:"diffs,omitempty"` // "out", then the gradient of each input ("dx", "dw" or "da", "db")
	// Step times: one RunAll of forward and gradients, the median of Runs. The GPU's includes the copies
	// between host and device of this first slice (see gpu/internal/cudaops's package doc).
	CPUMillis       float64 `json:"cpu_ms_per_step"`
	GPUMillis       float64 `json:"gpu_ms_per_step,omitempty"`
	CPUImagesPerSec float64 `json:"cpu_images_per_second"`
	GPUImagesPerSec float64 `json:"gpu_images_per_second,omitempty"`
	// ConvAlgos are the cuDNN algorithms a convolution ran with: forward, data gradient, filter gradient.
	ConvAlgos       []int32 `json:"cudnn_algos,omitempty"`
	MaxRelDiff      float64 `json:"max_rel_diff"`
	WithinTolerance bool    `json:"within_tolerance"`
}

// CheckReport is what Check returns (and `bicyc doctor --gpu` prints as JSON).
type CheckReport struct {
	Device    *cuda.Device   `json:"device,omitempty"`
	Libraries []cuda.Library `json:"libraries,omitempty"`
	CUDAError string         `json:"cuda_error,omitempty"` // why CUDA could not be used
	CPUBLAS   string         `json:"cpu_blas,omitempty"`   // the BLAS behind the CPU ops' matrix products, set by the caller
	Tolerance float64        `json:"tolerance"`
	Cases     []CaseReport   `json:"cases"`
	// OK: CUDA loaded and every case ran on both devices within Tolerance.
	OK bool `json:"ok"`
}

// Check runs each case's forward pass and gradients on the CPU (models/ops) and on the GPU (gpu/internal/cudaops)
// from the same inputs, in float32, and compares them. Without CUDA it still measures the CPU and reports
// why the GPU could not run.
func Check(opt CheckOptions) CheckReport {
	if len(opt.Cases) == 0 {
		opt.Cases = DefaultCheckCases
	}
	if opt.Runs <= 0 {
		opt.Runs = 3
	}
	if opt.Tolerance <= 0 {
		opt.Tolerance = 1e-4
	}
	rep := CheckReport{Tolerance: opt.Tolerance, OK: true}
	r, cudaErr := cuda.Open()
	if cudaErr != nil {
		rep.CUDAError = cudaErr.Error()
		rep.OK = false
	} else {
		rep.Device, rep.Libraries = &r.Device, r.Libraries
	}
	for _, c := range opt.Cases {
		// Seeded by name: a case gets the same inputs whichever others run with it.
		h := fnv.New64a()
		fmt.Fprint(h, c.Name)
		cr := checkCase(c, opt, opt.Seed^h.Sum64(), cudaErr == nil)
		if cr.Error != "" || !cr.WithinTolerance {
			rep.OK = false
		}
		rep.Cases = append(rep.Cases, cr)
	}
	return rep
}

// layerRun is one graph of a case on one device, ready to run.
type layerRun struct {
	g     *G.ExprGraph
	bn    *ops.BatchNorm // the batch norm's running statistics, for a Norm case
	m     G.VM
	out   *G.Node
	loss  *G.Node
	grads G.Nodes
}

func checkCase(c CheckCase, opt CheckOptions, seed uint64, gpu bool) (cr CaseReport) {
	cr = CaseReport{CheckCase: c}
	rng := rand.New(rand.NewPCG(seed, 32))
	if len(c.SGD) > 0 {
		return checkSGD(c, opt, rng, gpu)
	}
	inputs, batch, err := caseInputs(c, rng)
	if err != nil {
		cr.Error = err.Error()
		return cr
	}
	progress(opt, c, "cpu")
	cpu, err := buildLayer(c, inputs, false)
	if err != nil {
		cr.Error = "cpu graph: " + err.Error()
		return cr
	}
	defer cpu.m.Close()
	cpuDur, err := timeRuns(cpu.m, opt.Runs)
	if err != nil {
		cr.Error = "cpu run: " + err.Error()
		return cr
	}
	cr.CPUMillis = ms(cpuDur)
	cr.CPUImagesPerSec = float64(batch) / cpuDur.Seconds()
	cr.LossCPU = scalar(cpu.loss)
	if !gpu {
		cr.Error = "gpu: not run (cuda unavailable)"
		return cr
	}
	progress(opt, c, "gpu")
	dev, err := buildLayer(c, inputs, true)
	if err != nil {
		cr.Error = "gpu graph: " + err.Error()
		return cr
	}
	defer dev.m.Close()
	defer func() {
		if err := cudaops.Release(dev.g); err != nil && cr.Error == "" {
			cr.Error = "gpu release: " + err.Error()
		}
	}()
	gpuDur, err := timeRuns(dev.m, opt.Runs)
	if err != nil {
		cr.Error = "gpu run: " + err.Error()
		return cr
	}
	cr.ConvAlgos = cudaops.ConvAlgos(dev.out)
	cr.GPUMillis = ms(gpuDur)
	cr.GPUImagesPerSec = float64(batch) / gpuDur.Seconds()
	cr.LossGPU = scalar(dev.loss)
	cr.compareLayers(cpu, dev)
	cr.WithinTolerance = cr.MaxRelDiff <= opt.Tolerance
	return cr
}

// progress writes a line to opt.Progress, if set, before a device of case c runs.
func progress(opt CheckOptions, c CheckCase, device string) {
	if opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "check %s: %s\n", c.Name, device)
	}
}

// caseInputs draws the case's inputs from rng, scaled to unit-sized outputs, and returns its batch size.
func caseInputs(c CheckCase, rng *rand.Rand) ([]*tensor.Dense, int, error) {
	inShapes, batch, err := c.shapes()
	if err != nil {
		return nil, 0, err
	}
	inputs := make([]*tensor.Dense, len(inShapes))
	for i, s := range inShapes {
		inputs[i] = randomTensor(rng, s, 1/math.Sqrt(float64(fanIn(c, i, s))))
	}
	if c.Func == "crossentropy" { // logits of a few units, one-hot targets
		inputs[0] = randomTensor(rng, inShapes[0], 4)
		inputs[1] = tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(inShapes[1]...))
		for b := 0; b < c.X[0]; b++ {
			inputs[1].Float32s()[b*c.X[1]+rng.IntN(c.X[1])] = 1
		}
	}
	return inputs, batch, nil
}

// compareLayers sets the diffs of the output, each input's gradient and, for a batch norm, the running
// statistics, and the largest relative one.
func (cr *CaseReport) compareLayers(cpu, dev *layerRun) {
	c := cr.CheckCase
	names := []string{"out", "dx", "dw"}
	if c.Norm {
		names = []string{"out", "dx", "dgamma", "dbeta"}
	} else if c.A != nil || c.Func == "bias" || c.Func == "mse" {
		names = []string{"out", "dx", "db"}
		if c.A != nil || c.Func == "mse" {
			names[1] = "da"
		}
	} else if c.W == nil {
		names = []string{"out", "dx"}
	}
	cr.Diffs = map[string]Diff{}
	pairs := append(G.Nodes{cpu.out}, cpu.grads...)
	gpuPairs := append(G.Nodes{dev.out}, dev.grads...)
	for i, name := range names {
		cr.Diffs[name] = compare(pairs[i].Value(), gpuPairs[i].Value())
	}
	if c.Norm {
		cr.Diffs["running_mean"] = compare(tensor.New(tensor.WithBacking(cpu.bn.RunningMean)), tensor.New(tensor.WithBacking(dev.bn.RunningMean)))
		cr.Diffs["running_var"] = compare(tensor.New(tensor.WithBacking(cpu.bn.RunningVar)), tensor.New(tensor.WithBacking(dev.bn.RunningVar)))
	}
	for _, d := range cr.Diffs {
		cr.MaxRelDiff = math.Max(cr.MaxRelDiff, d.MaxRel)
	}
}

// shapes returns the case's input shapes and its batch size (images, or rows of a).
func (c CheckCase) shapes() ([]tensor.Shape, int, error) {
	switch {
	case len(c.X) == 4 && len(c.W) == 4:
		return []tensor.Shape{c.X, c.W}, c.X[0], nil
	case len(c.A) == 2 && len(c.B) == 2:
		return []tensor.Shape{c.A, c.B}, c.A[0], nil
	case len(c.X) == 4 && c.W == nil && c.Pool > 0:
		return []tensor.Shape{c.X}, c.X[0], nil
	case len(c.X) == 4 && c.W == nil && c.Norm, len(c.X) == 2 && c.Norm && c.Eval:
		return []tensor.Shape{c.X, {c.X[1]}, {c.X[1]}}, c.X[0], nil
	case len(c.X) > 0 && c.W == nil && (c.Func == "relu" || c.Func == "gelu"):
		return []tensor.Shape{c.X}, c.X[0], nil
	case (len(c.X) == 4 || len(c.X) == 2) && c.W == nil && c.Func == "bias":
		return []tensor.Shape{c.X, {c.X[1]}}, c.X[0], nil
	case len(c.X) == 4 && c.W == nil && c.Func == "avgpool":
		return []tensor.Shape{c.X}, c.X[0], nil
	case len(c.X) == 2 && c.W == nil && c.Func == "crossentropy", len(c.X) > 0 && c.W == nil && c.Func == "mse":
		return []tensor.Shape{c.X, c.X}, c.X[0], nil
	}
	return nil, 0, fmt.Errorf("case %q: want x [N,C,H,W] and w [O,C,K,K], x [N,C,H,W] and pool or batch_norm, x and func relu, gelu, bias, avgpool, crossentropy or mse, a [M,K] and b [K,N], or sgd", c.Name)
}

// fanIn is the number of terms summed per output, to scale random inputs to unit-sized outputs.
func fanIn(c CheckCase, i int, s tensor.Shape) int {
	if i == 0 || c.Norm || c.Func == "bias" || c.Func == "crossentropy" || c.Func == "mse" {
		return 1
	}
	if c.A != nil {
		return s[0]
	}
	return s[1] * s[2] * s[3]
}

// buildLayer builds loss = Σ layer(inputs) ⊙ r with the CPU ops or the GPU ops. The first input passes through
// a multiplication by one, so that it is not a leaf and its gradient is built, as inside a network.
func buildLayer(c CheckCase, inputs []*tensor.Dense, gpu bool) (*layerRun, error) {
	g := G.NewGraph()
	in := make(G.Nodes, len(inputs))
	for i, t := range inputs {
		in[i] = G.NewTensor(g, tensor.Float32, t.Dims(), G.WithShape(t.Shape()...), G.WithValue(t.Clone()), G.WithName(fmt.Sprintf("in%d", i)))
	}
	first, err := G.Mul(in[0], G.NewConstant(float32(1)))
	if err != nil {
		return nil, err
	}
	bn := caseBatchNorm(c)
	layer := cpuLayer
	if gpu {
		layer = gpuLayer
	}
	out, err := layer(c, bn, first, in)
	if err != nil {
		return nil, err
	}
	var loss *G.Node
	if out.IsScalar() { // a loss: its gradient is a fixed scalar
		loss, err = G.Mul(out, G.NewScalar(g, tensor.Float32, G.WithValue(float32(0.75)), G.WithName("r")))
	} else {
		rng := rand.New(rand.NewPCG(7, uint64(out.Shape().TotalSize())))
		r := G.NewTensor(g, tensor.Float32, out.Dims(), G.WithShape(out.Shape()...), G.WithValue(randomTensor(rng, out.Shape(), 1)), G.WithName("r"))
		var prod *G.Node
		if prod, err = G.HadamardProd(out, r); err == nil {
			loss, err = G.Sum(prod)
		}
	}
	if err != nil {
		return nil, err
	}
	wrt := in
	if c.Func == "crossentropy" {
		wrt = in[:1] // the targets are data
	}
	grads, err := G.Grad(loss, wrt...)
	if err != nil {
		return nil, err
	}
	return &layerRun{g: g, bn: bn, m: G.NewTapeMachine(g), out: out, loss: loss, grads: grads}, nil
}

// caseBatchNorm returns the batch norm layer of a Norm case, nil for another: in evaluation mode with
// fixed, channel-dependent running statistics.
func caseBatchNorm(c CheckCase) *ops.BatchNorm {
	if !c.Norm {
		return nil
	}
	bn := ops.NewBatchNorm(c.X[1])
	if c.Eval {
		for i := range bn.RunningMean {
			bn.RunningMean[i] = float32(0.1 * math.Sin(float64(i)))
			bn.RunningVar[i] = float32(1 + 0.5*math.Cos(float64(i)))
		}
	}
	return bn
}

// cpuLayer applies the case's layer with the CPU ops of models/ops (and gorgonia's product) to first, the
// first input, and in, all of them.
func cpuLayer(c CheckCase, bn *ops.BatchNorm, first *G.Node, in G.Nodes) (*G.Node, error) {
	switch {
	case c.Norm:
		return bn.Apply(first, in[1], in[2], !c.Eval, c.Eval && c.ReLU)
	case c.Pool > 0:
		return ops.MaxPool(first, c.Pool, c.Stride, c.Pad)
	case c.Func == "relu":
		return ops.ReLU(first)
	case c.Func == "gelu":
		return ops.GELU(first)
	case c.Func == "bias":
		return ops.AddChannelBias(first, in[1])
	case c.Func == "avgpool":
		return ops.GlobalAvgPool(first)
	case c.Func == "crossentropy":
		return ops.CrossEntropy(first, in[1])
	case c.Func == "mse":
		return ops.MeanSquaredError(first, in[1])
	case c.A != nil:
		return G.Mul(first, in[1])
	}
	return ops.Conv2d(first, in[1], c.Stride, c.Pad)
}

// gpuLayer is cpuLayer with the GPU ops.
func gpuLayer(c CheckCase, bn *ops.BatchNorm, first *G.Node, in G.Nodes) (*G.Node, error) {
	switch {
	case c.Norm && c.Eval:
		return cudaops.BatchNormEval(bn, first, in[1], in[2], c.ReLU)
	case c.Norm:
		return cudaops.BatchNorm(bn, first, in[1], in[2])
	case c.Pool > 0:
		return cudaops.MaxPool(first, c.Pool, c.Stride, c.Pad)
	case c.Func == "relu":
		return cudaops.ReLU(first)
	case c.Func == "gelu":
		return cudaops.GELU(first)
	case c.Func == "bias":
		return cudaops.AddChannelBias(first, in[1])
	case c.Func == "avgpool":
		return cudaops.GlobalAvgPool(first)
	case c.Func == "crossentropy":
		return cudaops.CrossEntropy(first, in[1])
	case c.Func == "mse":
		return cudaops.MeanSquaredError(first, in[1])
	case c.A != nil:
		return cudaops.MatMul(first, in[1])
	}
	return cudaops.Conv2d(first, in[1], c.Stride, c.Pad)
}

// timeRuns runs m once untimed, then runs times, and returns the median duration.
func timeRuns(m G.VM, runs int) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i <= runs; i++ {
		start := time.Now()
		err := m.RunAll()
		d := time.Since(start)
		m.Reset()
		if err != nil {
			return 0, err
		}
		if i > 0 {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func randomTensor(rng *rand.Rand, s tensor.Shape, scale float64) *tensor.Dense {
	v := make([]float32, s.TotalSize())
	for i := range v {
		v[i] = float32(scale * (2*rng.Float64() - 1))
	}
	return tensor.New(tensor.WithShape(s...), tensor.WithBacking(v))
}

func scalar(n *G.Node) float64 {
	if v, ok := n.Value().Data().(float32); ok {
		return float64(v)
	}
	return math.NaN()
}

// compare returns the largest absolute difference of two float32 tensors and that relative to cpu's largest
// magnitude; NaN when they cannot be compared.
func compare(cpu, gpu G.Value) Diff {
	a, okA := float32s(cpu)
	b, okB := float32s(gpu)
	if !okA || !okB || len(a) != len(b) {
		return Diff{MaxAbs: math.NaN(), MaxRel: math.NaN()}
	}
	var diff, scale float64
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if d > diff || math.IsNaN(d) {
			diff = d
		}
		scale = math.Max(scale, math.Abs(float64(a[i])))
	}
	rel := diff
	if scale > 0 {
		rel = diff / scale
	}
	return Diff{MaxAbs: diff, MaxRel: rel}
}

// float32s returns the values of a float32 tensor or scalar.
func float32s(v G.Value) ([]float32, bool) {
	switch d := v.Data().(type) {
	case []float32:
		return d, true
	case float32:
		return []float32{d}, true
	}
	return nil, false
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// valueGrad is a parameter and its gradient, as a graph hands them to a solver.
type valueGrad struct{ w, g *tensor.Dense }

func (p valueGrad) Value() G.Value         { return p.w }
func (p valueGrad) Grad() (G.Value, error) { return p.g, nil }

// checkSGD runs Runs+1 steps of optim.SGD and of SGD on copies of the same random weights, each step with the
// same random gradients (scaled so that some steps clip and some do not), and compares the weights after
// ("w") and the last gradient norms ("norm"). Step times are the median of the timed steps; the loss fields
// hold the sum of the final weights.
func checkSGD(c CheckCase, opt CheckOptions, rng *rand.Rand, gpu bool) (cr CaseReport) {
	cr = CaseReport{CheckCase: c}
	w0, grads := sgdInputs(c, opt.Runs+1, rng)
	progress(opt, c, "cpu")
	cpu := &optim.SGD{LR: 0.1, Momentum: 0.9, WeightDecay: 5e-4, ClipNorm: 1}
	cpuW, cpuNorms, cpuDur, err := runSolver(cpu, func() float64 { return cpu.LastNorm }, w0, grads)
	if err != nil {
		cr.Error = "cpu run: " + err.Error()
		return cr
	}
	cr.CPUMillis, cr.LossCPU = ms(cpuDur), sumAll(cpuW)
	if !gpu {
		cr.Error = "gpu: not run (cuda unavailable)"
		return cr
	}
	progress(opt, c, "gpu")
	dev := &cudaops.SGD{LR: cpu.LR, Momentum: cpu.Momentum, WeightDecay: cpu.WeightDecay, ClipNorm: cpu.ClipNorm}
	defer func() {
		if err := dev.Free(); err != nil && cr.Error == "" {
			cr.Error = "gpu release: " + err.Error()
		}
	}()
	devW, devNorms, devDur, err := runSolver(dev, func() float64 { return dev.LastNorm }, w0, grads)
	if err != nil {
		cr.Error = "gpu run: " + err.Error()
		return cr
	}
	cr.GPUMillis, cr.LossGPU = ms(devDur), sumAll(devW)
	cr.Diffs = map[string]Diff{"w": compare(concat(cpuW), concat(devW)), "norm": compare(float32Tensor(cpuNorms), float32Tensor(devNorms))}
	for _, d := range cr.Diffs {
		cr.MaxRelDiff = math.Max(cr.MaxRelDiff, d.MaxRel)
	}
	cr.WithinTolerance = cr.MaxRelDiff <= opt.Tolerance
	return cr
}

// sgdInputs draws the weights of an SGD case and each step's gradients.
func sgdInputs(c CheckCase, steps int, rng *rand.Rand) (w0 []*tensor.Dense, grads [][]*tensor.Dense) {
	w0 = make([]*tensor.Dense, len(c.SGD))
	grads = make([][]*tensor.Dense, steps)
	for i, n := range c.SGD {
		w0[i] = randomTensor(rng, tensor.Shape{n}, 1)
	}
	for k := range grads {
		for _, n := range c.SGD {
			// Growing from step to step; with clipping at 1 every step of a case of a few values or more clips.
			grads[k] = append(grads[k], randomTensor(rng, tensor.Shape{n}, float64(k+1)/float64(steps)))
		}
	}
	return w0, grads
}

// runSolver steps solver over copies of w0, one step per entry of grads, and returns the weights after,
// each step's gradient norm (norm) and the median time of the steps after the first.
func runSolver(solver G.Solver, norm func() float64, w0 []*tensor.Dense, grads [][]*tensor.Dense) ([]*tensor.Dense, []float64, time.Duration, error) {
	ws := make([]*tensor.Dense, len(w0))
	model := make([]G.ValueGrad, len(w0))
	for i, w := range w0 {
		ws[i] = w.Clone().(*tensor.Dense)
		model[i] = valueGrad{w: ws[i], g: tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(w.Shape()...))}
	}
	var norms []float64
	var ds []time.Duration
	for k := range grads {
		for i := range model {
			copy(model[i].(valueGrad).g.Float32s(), grads[k][i].Float32s())
		}
		start := time.Now()
		if err := solver.Step(model); err != nil {
			return nil, nil, 0, err
		}
		if k > 0 {
			ds = append(ds, time.Since(start))
		}
		norms = append(norms, norm())
	}
	slices.Sort(ds)
	return ws, norms, ds[len(ds)/2], nil
}

// sumAll is the sum of all values of ws.
func sumAll(ws []*tensor.Dense) float64 {
	var t float64
	for _, w := range ws {
		for _, v := range w.Float32s() {
			t += float64(v)
		}
	}
	return t
}

// concat joins the values of ws into one vector.
func concat(ws []*tensor.Dense) *tensor.Dense {
	var all []float32
	for _, w := range ws {
		all = append(all, w.Float32s()...)
	}
	return tensor.New(tensor.WithBacking(all))
}

// float32Tensor is v as a float32 vector.
func float32Tensor(v []float64) *tensor.Dense {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return tensor.New(tensor.WithBacking(out))
}
