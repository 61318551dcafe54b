package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bench/compare"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/safetensors"
	"github.com/bicyc/bicyc/train"
)

// options are the command's flags.
type options struct {
	script     string
	ompWait    string
	cpuProfile string
	memProfile string
	trace      string
	threads    int
	rounds     int
	models     string
	ceiling    int
	// Per benchmark: steps per round, batch size and head classes.
	convSteps, convBatch, convClasses       int
	resnetSteps, resnetBatch, resnetClasses int
	imagenetSteps, imagenetBatch            int
}

// batchesKept is how many distinct batches each side cycles through.
const batchesKept = 4

// featureDim is S, the default feature dimension (docs/method.md, "Setting").
const featureDim = 64

// defaultPolicy names libgomp's default wait policy (OMP_WAIT_POLICY unset) in --omp-wait-policy.
const defaultPolicy = "default"

func main() {
	// First: it may restart the program once with OpenBLAS's kernels for this processor.
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/train: warning:", err)
	}
	var o options
	flag.StringVar(&o.script, "script", "bench/train_torch.py", "the PyTorch side")
	flag.StringVar(&o.ompWait, "omp-wait-policy", "PASSIVE,"+defaultPolicy, "comma-separated OMP_WAIT_POLICY values, one PyTorch worker each (PASSIVE: no spinning at OpenMP barriers; ACTIVE; default: unset, libgomp's default, what a PyTorch user gets); bicyc is compared with the fastest")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of bicyc's timed steps to this `file`.N, one per round (go tool pprof; its samples carry the op label of each convolution, batch norm and max pooling, which -tags sums)")
	flag.StringVar(&o.memProfile, "memprofile", "", "write a heap profile (in use after the last round) of each benchmark to this `file`.<model> (go tool pprof -sample_index=inuse_space)")
	flag.StringVar(&o.trace, "trace", "", "write an execution trace of bicyc's timed steps to this `file`.N, one per round (go tool trace: the per-P timeline shows where the cores sit idle)")
	flag.IntVar(&o.threads, "threads", 2, "threads of both sides (bicyc ops and torch intra-op)")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds (medians are over rounds)")
	flag.StringVar(&o.models, "models", "convnet,resnet18,resnet18-224,resnet18-224-last", "benchmarks to run: convnet (BiCyc Stage I step), resnet18 (CIFAR ResNet-18 + CE step), resnet18-224 (ImageNet-stem ResNet-18 at 3x224x224 + CE), resnet18-224-last (the same with only layer4 and the reduction trainable)")
	flag.IntVar(&o.ceiling, "ceiling-size", 2048, "size of the square OpenBLAS sgemm that measures the machine's ceiling in GFLOP/s (0: skip)")
	flag.IntVar(&o.convSteps, "convnet-steps", 6, "convnet steps per round")
	flag.IntVar(&o.convBatch, "convnet-batch", 128, "convnet batch size")
	flag.IntVar(&o.convClasses, "convnet-classes", 2, "convnet head classes (a default Fashion-MNIST task)")
	flag.IntVar(&o.resnetSteps, "resnet-steps", 2, "resnet18 steps per round")
	flag.IntVar(&o.resnetBatch, "resnet-batch", 64, "resnet18 batch size")
	flag.IntVar(&o.resnetClasses, "resnet-classes", 10, "head classes of the ResNet benchmarks (a CIFAR-100 10x10 task)")
	flag.IntVar(&o.imagenetSteps, "imagenet-steps", 1, "resnet18-224 steps per round")
	flag.IntVar(&o.imagenetBatch, "imagenet-batch", 16, "resnet18-224 batch size")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/train:", err)
		os.Exit(1)
	}
}

// benchmark is one network trained side by side.
type benchmark struct {
	name           string
	key            string // the --models name
	arch           arch.Backbone
	bicyc          bool // the full BiCyc Stage I step, else backbone + CE
	freeze         int  // leading backbone stages frozen (models.Backbone.FreezeStages)
	steps, batch   int
	classes        int
	channels, side int
	flops          float64   // of one step, counted analytically (stepFLOPs)
	ours, oursCPU  []float64 // images per second and per CPU-second (all threads), one per round
	oursRSS        int64     // peak RSS in bytes
	oursTerms      []float64 // loss terms of the first step
	termNames      []string
	torch          []*torchSide // one per OpenMP wait policy
}

// torchSide is one PyTorch worker of a benchmark, under one OpenMP wait policy.
type torchSide struct {
	policy     string // OMP_WAIT_POLICY, defaultPolicy for unset
	worker     *compare.Worker
	imgs, cpu  []float64 // images per second and per CPU-second, one per round
	rss        int64
	firstTerms []float64
}

// benchmarks returns the benchmarks --models names.
func benchmarks(o options) ([]*benchmark, error) {
	var benches []*benchmark
	for _, name := range strings.Split(o.models, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "convnet":
			benches = append(benches, &benchmark{name: fmt.Sprintf("convnet BiCyc Stage I step, 1x28x28, batch %d", o.convBatch),
				arch: arch.ConvNet, bicyc: true, steps: o.convSteps, batch: o.convBatch, classes: o.convClasses, channels: 1, side: 28})
		case "resnet18":
			benches = append(benches, &benchmark{name: fmt.Sprintf("ResNet-18 + CE, 3x32x32, batch %d", o.resnetBatch),
				arch: arch.ResNet18, steps: o.resnetSteps, batch: o.resnetBatch, classes: o.resnetClasses, channels: 3, side: 32})
		case "resnet18-224":
			benches = append(benches, &benchmark{name: fmt.Sprintf("ResNet-18 ImageNet stem + CE, 3x224x224, batch %d, all trainable", o.imagenetBatch),
				arch: arch.ResNet18ImageNet, steps: o.imagenetSteps, batch: o.imagenetBatch, classes: o.resnetClasses, channels: 3, side: 224})
		case "resnet18-224-last":
			benches = append(benches, &benchmark{name: fmt.Sprintf("ResNet-18 ImageNet stem + CE, 3x224x224, batch %d, layer4 trainable", o.imagenetBatch),
				arch: arch.ResNet18ImageNet, freeze: 4, steps: o.imagenetSteps, batch: o.imagenetBatch, classes: o.resnetClasses, channels: 3, side: 224})
		default:
			return nil, fmt.Errorf("--models: unknown benchmark %q, want convnet, resnet18, resnet18-224 or resnet18-224-last", name)
		}
		benches[len(benches)-1].key = name
	}
	return benches, nil
}

func run(o options, out io.Writer) error {
	if o.threads < 1 || o.rounds < 1 || o.convSteps < 1 || o.resnetSteps < 1 || o.imagenetSteps < 1 || o.convBatch < 2 ||
		o.resnetBatch < 2 || o.imagenetBatch < 2 || o.convClasses < 2 || o.resnetClasses < 2 || o.ceiling < 0 {
		return errors.New("--threads, --rounds and steps must be >= 1, batches and classes >= 2, --ceiling-size >= 0")
	}
	if o.convBatch <= featureDim+1 {
		// Below that the anti-collapse loss's batch covariance is singular;
		// bicyc repairs it with ops.RobustCholesky, bench/train_torch.py by
		// growing the jitter, so step 1's ac terms would differ.
		return fmt.Errorf("--convnet-batch %d: want more than %d (the feature dimension + 1), where the batch covariance of the anti-collapse loss has full rank", o.convBatch, featureDim+1)
	}
	if _, err := os.Stat(o.script); err != nil {
		return fmt.Errorf("PyTorch script: %w (run from the repository root or pass --script)", err)
	}
	policies := strings.Split(o.ompWait, ",")
	ops.UseOpenBLAS()
	ops.SetThreads(o.threads)
	// Per-layer shares of the profile: go tool pprof -tags.
	ops.SetProfileLabels(o.cpuProfile != "")
	benches, err := benchmarks(o)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bicyc-bench-train-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	loadStart, err := compare.LoadAverage()
	if err != nil {
		return err
	}
	var ceiling, ceilingCPU []float64
	measureCeiling := func() error {
		wall, cpu, err := sgemmGFLOPs(o.ceiling, 3)
		ceiling, ceilingCPU = append(ceiling, wall...), append(ceilingCPU, cpu)
		return err
	}
	if o.ceiling > 0 {
		if err := measureCeiling(); err != nil {
			return err
		}
	}
	var torch torchInfo
	for _, b := range benches {
		if torch, err = b.run(o, policies, filepath.Join(tmp, b.key)); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
	}
	if o.ceiling > 0 {
		if err := measureCeiling(); err != nil {
			return err
		}
	}
	loadEnd, err := compare.LoadAverage()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "## Training step: bicyc vs PyTorch %s, %s\n\n", torch.Torch, time.Now().Format("2006-01-02 15:04"))
	k := kernels.Current()
	fmt.Fprintf(out, "processor: %s, %s\n", k.CPUModel, k.CPUFeatures)
	fmt.Fprintf(out, "bicyc kernels: %s; models/ops vector kernels: %s\n", k, ops.VectorKernels())
	fmt.Fprintf(out, "PyTorch kernels: %s\n", torch.Kernels)
	fmt.Fprintf(out, "%d threads each (bicyc: models/ops goroutines, single-threaded OpenBLAS; torch.set_num_threads); %d CPUs; load average %s at start, %s at end\n",
		o.threads, runtime.NumCPU(), loadStart, loadEnd)
	fmt.Fprintf(out, "PyTorch workers, one per OMP_WAIT_POLICY: %s (%s: unset, libgomp's default); bicyc / PyTorch is against the faster one\n",
		strings.Join(policies, ", "), defaultPolicy)
	fmt.Fprintf(out, "images/s: median of %d interleaved rounds; a step is forward, backward and SGD update (momentum 0.9, weight decay 5e-4, clip 1.0)\n", o.rounds)
	fmt.Fprintln(out, "GFLOP/s: floating-point operations of the step's convolutions and linear layers counted analytically (2 per multiply-add; forward, weight gradients of trainable layers, input gradients where back-propagation needs them; BN, ReLU, pooling and losses not counted) over the median time of a step")
	if len(ceiling) > 0 {
		fmt.Fprintf(out, "ceiling: OpenBLAS sgemm %dx%dx%d split over %d goroutines as bicyc runs it, median %.1f GFLOP/s (best %.1f; by call, start and end: %s); %s GFLOP/CPU-s (start, end)\n",
			o.ceiling, o.ceiling, o.ceiling, o.threads, compare.Median(ceiling), slices.Max(ceiling), roundList(ceiling, "%.1f"), roundList(ceilingCPU, "%.1f"))
	}
	fmt.Fprintln(out)
	writeTables(out, benches)
	return nil
}

// writeTables prints the speed table and the table of first-step loss terms.
func writeTables(out io.Writer, benches []*benchmark) {
	header := []string{"benchmark", "GFLOP/step", "bicyc img/s"}
	for _, t := range benches[0].torch {
		header = append(header, "PyTorch "+t.policy+" img/s")
	}
	header = append(header, "bicyc / best PyTorch", "same, by img/CPU-s", "bicyc GFLOP/s", "best PyTorch GFLOP/s", "bicyc GFLOP/CPU-s", "best PyTorch GFLOP/CPU-s", "bicyc img/CPU-s", "PyTorch img/CPU-s", "bicyc peak RSS (MB)", "PyTorch peak RSS (MB)", "img/s by round: bicyc ; PyTorch ...")
	t := compare.Table{Header: header}
	for _, b := range benches {
		ours := compare.Median(b.ours)
		best := b.torch[0]
		for _, ts := range b.torch[1:] {
			if compare.Median(ts.imgs) > compare.Median(best.imgs) {
				best = ts
			}
		}
		row := []string{b.name, fmt.Sprintf("%.2f", b.flops/1e9), fmt.Sprintf("%.1f", ours)}
		var cpu, rss, rounds []string
		for _, ts := range b.torch {
			row = append(row, fmt.Sprintf("%.1f", compare.Median(ts.imgs)))
			cpu = append(cpu, fmt.Sprintf("%.1f", compare.Median(ts.cpu)))
			rss = append(rss, fmt.Sprintf("%.0f", compare.MB(ts.rss)))
			rounds = append(rounds, roundList(ts.imgs, "%.1f"))
		}
		bestImgs := compare.Median(best.imgs)
		perImage := b.flops / float64(b.batch) / 1e9
		bestCPU := 0.0
		for _, ts := range b.torch {
			bestCPU = max(bestCPU, compare.Median(ts.cpu))
		}
		row = append(row, fmt.Sprintf("%.2f (vs %s)", ours/bestImgs, best.policy), fmt.Sprintf("%.2f", compare.Median(b.oursCPU)/bestCPU),
			fmt.Sprintf("%.1f", ours*perImage), fmt.Sprintf("%.1f", bestImgs*perImage),
			fmt.Sprintf("%.1f", compare.Median(b.oursCPU)*perImage), fmt.Sprintf("%.1f", bestCPU*perImage),
			fmt.Sprintf("%.1f", compare.Median(b.oursCPU)), strings.Join(cpu, " ; "),
			fmt.Sprintf("%.0f", compare.MB(b.oursRSS)), strings.Join(rss, " ; "),
			roundList(b.ours, "%.1f")+" ; "+strings.Join(rounds, " ; "))
		t.Add(row...)
	}
	t.Write(out)
	fmt.Fprintln(out)
	p := compare.Table{Header: []string{"same network: loss terms of step 1, same weights and batch", "bicyc", "PyTorch", "relative difference"}}
	for _, b := range benches {
		for i, name := range b.termNames {
			v := b.torch[0].firstTerms[i]
			p.Add(b.key+" "+name, fmt.Sprintf("%.6g", b.oursTerms[i]), fmt.Sprintf("%.6g", v), fmt.Sprintf("%.1e", relDiff(b.oursTerms[i], v)))
		}
	}
	p.Write(out)
}

// profiles holds the CPU profile samples of every timed round: the Go
// profiler writes one profile per Start/Stop, so each round writes its own
// file, path.N, and `go tool pprof path.*` merges them.
var profiles int

func resumeProfile(path string) error {
	profiles++
	f, err := os.Create(fmt.Sprintf("%s.%d", path, profiles))
	if err != nil {
		return err
	}
	// The file stays open until the process exits: StopCPUProfile flushes it.
	return pprof.StartCPUProfile(f)
}

// traces numbers the execution traces, one per timed round, as profiles numbers the CPU profiles.
var traces int

func startTrace(path string) error {
	traces++
	f, err := os.Create(fmt.Sprintf("%s.%d", path, traces))
	if err != nil {
		return err
	}
	// The file stays open until the process exits: trace.Stop flushes it.
	return trace.Start(f)
}

// writeHeapProfile writes the heap profile of the memory in use now, while
// the step's graph is still alive.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func roundList(xs []float64, format string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(s, " ")
}

func relDiff(a, b float64) float64 { return math.Abs(a-b) / max(math.Abs(b), 1e-6) }

// run builds both sides of b with the same initial weights and batches
// (written to dir for PyTorch), checks that the first step's loss terms
// agree, then times interleaved rounds: bicyc, then each PyTorch worker.
// It returns PyTorch's version.
func (b *benchmark) run(o options, policies []string, dir string) (torchInfo, error) {
	fmt.Fprintf(os.Stderr, "%s\n", b.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return torchInfo{}, err
	}
	n, err := b.newNets()
	if err != nil {
		return torchInfo{}, err
	}
	b.flops = stepFLOPs(b, n)
	images, labels, err := b.batches()
	if err != nil {
		return torchInfo{}, err
	}
	args, err := b.writeInputs(o, dir, n, images, labels)
	if err != nil {
		return torchInfo{}, err
	}
	runtime.GC()
	debug.FreeOSMemory()
	if err := compare.ResetPeakRSS(); err != nil {
		return torchInfo{}, err
	}
	cfg := b.config()
	step, err := train.NewStage1Step(cfg, n, train.Stage1Input{Batch: b.batch, Channels: b.channels, Height: b.side, Width: b.side})
	if err != nil {
		return torchInfo{}, err
	}
	defer step.Close()
	info, err := b.startWorkers(o, policies, args)
	defer func() {
		for _, t := range b.torch {
			t.worker.Close()
		}
	}()
	if err != nil {
		return torchInfo{}, err
	}
	// Step 1 on both sides from the same weights and batch: the loss terms
	// must agree, or the two sides do not train the same network.
	b.termNames = step.Terms()
	if b.oursTerms, err = b.ourSteps(step, cfg.Train.LR, images, labels, 0, 1); err != nil {
		return torchInfo{}, err
	}
	for _, t := range b.torch {
		if err := b.checkFirstStep(t); err != nil {
			return torchInfo{}, err
		}
	}
	for r := range o.rounds {
		fmt.Fprintf(os.Stderr, "  round %d/%d\n", r+1, o.rounds)
		if err := b.round(o, step, cfg.Train.LR, images, labels, 1+r*b.steps); err != nil {
			return torchInfo{}, err
		}
	}
	if b.oursRSS, err = compare.PeakRSS(); err != nil {
		return torchInfo{}, err
	}
	if o.memProfile != "" {
		if err := writeHeapProfile(o.memProfile + "." + b.key); err != nil {
			return torchInfo{}, err
		}
	}
	return info, nil
}

// writeInputs writes the initial weights and the kept batches to dir and returns the PyTorch worker's arguments.
func (b *benchmark) writeInputs(o options, dir string, n train.Stage1Nets, images []float32, labels []int) ([]string, error) {
	statePath, batchPath := filepath.Join(dir, "state.safetensors"), filepath.Join(dir, "batches.safetensors")
	if err := safetensors.WriteFile(statePath, netsState(n), nil); err != nil {
		return nil, err
	}
	floatLabels := make([]float32, len(labels))
	for i, l := range labels {
		floatLabels[i] = float32(l)
	}
	if err := safetensors.WriteFile(batchPath, []safetensors.Tensor{
		{Name: "images", Shape: []int{len(labels), b.channels, b.side, b.side}, Data: images},
		{Name: "labels", Shape: []int{len(labels)}, Data: floatLabels},
	}, nil); err != nil {
		return nil, err
	}
	args := []string{o.script, "serve", "--arch", string(b.arch), "--state", statePath, "--batches", batchPath,
		"--batch", fmt.Sprint(b.batch), "--threads", fmt.Sprint(o.threads), "--freeze", fmt.Sprint(b.freeze)}
	if b.bicyc {
		args = append(args, "--bicyc")
	}
	return args, nil
}

// torchInfo is what a PyTorch worker says of itself in its greeting.
type torchInfo struct {
	Torch   string // version
	Threads int
	Kernels string // oneDNN's instruction set, ATen's capability, the BLAS (train_torch.py kernels())
}

// startWorkers starts one PyTorch worker per wait policy into b.torch and returns what the last says of itself.
func (b *benchmark) startWorkers(o options, policies []string, args []string) (torchInfo, error) {
	var hello torchInfo
	for _, policy := range policies {
		policy = strings.TrimSpace(policy)
		var env []string
		if policy != defaultPolicy && policy != "" {
			env = append(env, "OMP_WAIT_POLICY="+policy)
		}
		py, err := compare.StartWorker(&hello, env, args...)
		if err != nil {
			return hello, err
		}
		b.torch = append(b.torch, &torchSide{policy: policy, worker: py})
		if hello.Threads != o.threads {
			return hello, fmt.Errorf("PyTorch runs %d threads, want %d", hello.Threads, o.threads)
		}
	}
	return hello, nil
}

// checkFirstStep runs step 1 on worker t and checks its loss terms against bicyc's.
func (b *benchmark) checkFirstStep(t *torchSide) error {
	var first struct {
		Losses map[string]float64
	}
	if err := t.worker.Call(map[string]any{"op": "steps", "first": 0, "steps": 1}, &first); err != nil {
		return err
	}
	for i, name := range b.termNames {
		v, ok := first.Losses[name]
		if !ok {
			return fmt.Errorf("PyTorch reported no loss term %q (it has %v)", name, first.Losses)
		}
		t.firstTerms = append(t.firstTerms, v)
		if relDiff(b.oursTerms[i], v) > 1e-2 {
			return fmt.Errorf("step 1 loss %s: bicyc %.6g, PyTorch %.6g: the two sides do not compute the same step", name, b.oursTerms[i], v)
		}
	}
	return nil
}

// round times b.steps steps of bicyc, then of each PyTorch worker, from kept batch next on.
func (b *benchmark) round(o options, step *train.Stage1Step, lr float64, images []float32, labels []int, next int) error {
	cpu, err := compare.CPUTime()
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		if err := resumeProfile(o.cpuProfile); err != nil {
			return err
		}
	}
	if o.trace != "" {
		if err := startTrace(o.trace); err != nil {
			return err
		}
	}
	start := time.Now()
	if _, err := b.ourSteps(step, lr, images, labels, next, b.steps); err != nil {
		return err
	}
	wall := time.Since(start)
	pprof.StopCPUProfile()
	trace.Stop()
	cpuEnd, err := compare.CPUTime()
	if err != nil {
		return err
	}
	imgs := float64(b.steps * b.batch)
	b.ours = append(b.ours, imgs/wall.Seconds())
	b.oursCPU = append(b.oursCPU, imgs/(cpuEnd-cpu).Seconds())
	for _, t := range b.torch {
		var reply struct {
			Seconds    float64
			CPUSeconds float64 `json:"cpu_seconds"`
			PeakRSSKiB int64   `json:"peak_rss_kib"`
		}
		if err := t.worker.Call(map[string]any{"op": "steps", "first": next, "steps": b.steps}, &reply); err != nil {
			return err
		}
		if !(reply.Seconds > 0) || !(reply.CPUSeconds > 0) {
			return fmt.Errorf("PyTorch (%s) reply %+v", t.policy, reply)
		}
		t.imgs = append(t.imgs, imgs/reply.Seconds)
		t.cpu = append(t.cpu, imgs/reply.CPUSeconds)
		t.rss = reply.PeakRSSKiB << 10
	}
	return nil
}

// config is the training configuration of b's step: config.Default's
// (docs/method.md's loss weights, SGD momentum, weight decay and clipping); the
// plain step has no anti-collapse term, so it is backbone + head + CE.
func (b *benchmark) config() config.Config {
	cfg := config.Default()
	cfg.Loss.AntiCollapse = b.bicyc
	return cfg
}

// ourSteps runs steps training steps at learning rate lr on the kept
// batches first, first+1, ... (cycled) and returns the loss terms of the
// last one.
func (b *benchmark) ourSteps(step *train.Stage1Step, lr float64, images []float32, labels []int, first, steps int) ([]float64, error) {
	size := b.channels * b.side * b.side
	var terms []float64
	for s := range steps {
		k := (first + s) % batchesKept
		var err error
		if terms, err = step.Run(images[k*b.batch*size:(k+1)*b.batch*size], labels[k*b.batch:(k+1)*b.batch], lr); err != nil {
			return nil, fmt.Errorf("step %d: %w", first+s+1, err)
		}
	}
	return terms, nil
}

// newNets returns b's networks with fixed-seed initial weights: a new
// backbone and head and, for the BiCyc step, a frozen old backbone, a
// distiller and an adapter of docs/method.md's shapes (mlp mappers S -> 32S -> S).
func (b *benchmark) newNets() (train.Stage1Nets, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	var n train.Stage1Nets
	var err error
	if n.Backbone, err = models.NewBackbone(b.arch, b.channels, featureDim, rng); err != nil {
		return n, err
	}
	if err := n.Backbone.FreezeStages(b.freeze); err != nil {
		return n, err
	}
	n.Head = models.NewLinear(featureDim, b.classes, true, rng)
	if !b.bicyc {
		return n, nil
	}
	if n.Old, err = models.NewBackbone(b.arch, b.channels, featureDim, rng); err != nil {
		return n, err
	}
	if n.Distiller, err = models.NewMapper(arch.MLP, featureDim, models.DefaultHiddenMult, rng); err != nil {
		return n, err
	}
	n.Adapter, err = models.NewMapper(arch.MLP, featureDim, models.DefaultHiddenMult, rng)
	return n, err
}

// netsState returns every network's tensors under the prefixes
// bench/train_torch.py reads: backbone., head., old., distiller., adapter.
func netsState(n train.Stage1Nets) []safetensors.Tensor {
	s := models.WithPrefix("backbone.", n.Backbone.State())
	s = append(s, n.Head.State("head.")...)
	if n.Old != nil {
		s = append(s, models.WithPrefix("old.", n.Old.State())...)
		s = append(s, models.WithPrefix("distiller.", n.Distiller.State())...)
		s = append(s, models.WithPrefix("adapter.", n.Adapter.State())...)
	}
	return s
}

// batches returns batchesKept batches of images (NCHW float32, normalised)
// and their labels. convnet: real Fashion-MNIST training images of the
// first task's classes 0..classes-1, normalised as training does
// (data.DefaultNormalization). resnet18: fixed-seed standard normal images
// with labels i mod classes (CIFAR-100 cannot be downloaded here, and the
// step's speed does not depend on pixel values).
func (b *benchmark) batches() ([]float32, []int, error) {
	n := batchesKept * b.batch
	size := b.channels * b.side * b.side
	images := make([]float32, n*size)
	labels := make([]int, n)
	if b.arch != arch.ConvNet {
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range images {
			images[i] = float32(rng.NormFloat64())
		}
		for i := range labels {
			labels[i] = i % b.classes
		}
		return images, labels, nil
	}
	train, _, err := data.LoadFashionMNIST("")
	if err != nil {
		return nil, nil, err
	}
	classes := make([]int, b.classes)
	for i := range classes {
		classes[i] = i
	}
	idx := train.Subset(classes)
	if len(idx) < n {
		return nil, nil, fmt.Errorf("%d Fashion-MNIST training images of classes %v, want %d", len(idx), classes, n)
	}
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	p := imaging.Preprocess{Channels: 1, Height: b.side, Width: b.side, Mean: mean, Std: std}
	for i, j := range idx[:n] {
		p.Normalize(train.Image(j), images[i*size:(i+1)*size])
		labels[i] = train.Labels[j]
	}
	return images, labels, nil
}
