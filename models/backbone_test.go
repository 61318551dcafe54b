package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/safetensors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomImages returns a float32 [n,c,h,w] tensor uniform in [0,1).
func randomImages(rng *rand.Rand, n, c, h, w int) *tensor.Dense {
	data := make([]float32, n*c*h*w)
	for i := range data {
		data[i] = rng.Float32()
	}
	return tensor.New(tensor.WithShape(n, c, h, w), tensor.WithBacking(data))
}

func mustBackbone(t testing.TB, a arch.Backbone, c, s int, seed uint64) *Backbone {
	t.Helper()
	b, err := NewBackbone(a, c, s, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBackboneOutputShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		arch     arch.Backbone
		c, s     int
		x        *tensor.Dense
		training bool
	}{
		{arch.ConvNet, 1, 64, fashionBatch(t, 8), true},
		{arch.ConvNet, 1, 64, fashionBatch(t, 8), false},
		{arch.ConvNet, 3, 16, randomImages(rng, 2, 3, 32, 32), false},
		// ResNet-18 only at batch 2 on 32x32x3: it is the slow one.
		{arch.ResNet18, 3, 64, randomImages(rng, 2, 3, 32, 32), false},
	}
	for i, c := range cases {
		b := mustBackbone(t, c.arch, c.c, c.s, 3)
		r := buildBackboneRun(t, b, c.x.Shape(), c.training, false)
		got := r.run(t, c.x)
		r.vm.Close()
		n := c.x.Shape()[0]
		if s := r.out.Output.Shape(); !s.Eq(tensor.Shape{n, c.s}) {
			t.Errorf("case %d %s: output shape %v, want [%d %d]", i, c.arch, s, n, c.s)
		}
		if len(got) != n*c.s {
			t.Fatalf("case %d %s: %d output values, want %d", i, c.arch, len(got), n*c.s)
		}
		for j, v := range got {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("case %d %s: feature %d is %v", i, c.arch, j, v)
			}
		}
		if slices.Equal(got[:c.s], got[c.s:2*c.s]) {
			t.Errorf("case %d %s: two different images gave identical features", i, c.arch)
		}
		if len(r.out.Params) != len(b.Params()) {
			t.Errorf("case %d %s: %d parameter nodes, want %d", i, c.arch, len(r.out.Params), len(b.Params()))
		}
	}
}

func TestBackboneParamCounts(t *testing.T) {
	cases := []struct {
		arch          arch.Backbone
		c, s          int
		params, state int
	}{
		// conv1 32*1*9 + bn1 2*32 + conv2 64*32*9 + bn2 2*64 + conv3 128*64*9 + bn3 2*128 + reduce 64*128 + 64
		// = 288 + 64 + 18432 + 128 + 73728 + 256 + 8256.
		{arch.ConvNet, 1, 64, 101152, 17},
		// CIFAR ResNet-18 without its fc (11,168,832, torchvision's count less fc) plus reduce 512*64 + 64.
		{arch.ResNet18, 3, 64, 11168832 + 32832, 102},
	}
	for i, c := range cases {
		b := mustBackbone(t, c.arch, c.c, c.s, 1)
		if got := b.NumParams(); got != c.params {
			t.Errorf("case %d %s: NumParams %d, want %d", i, c.arch, got, c.params)
		}
		sum := 0
		for _, p := range b.Params() {
			sum += p.DataSize()
		}
		if sum != c.params {
			t.Errorf("case %d %s: Params hold %d values, want %d", i, c.arch, sum, c.params)
		}
		if got := len(b.State()); got != c.state {
			t.Errorf("case %d %s: %d state tensors, want %d", i, c.arch, got, c.state)
		}
	}
}

// stateShapes maps each state tensor name to its shape.
func stateShapes(ts []safetensors.Tensor) map[string]string {
	out := make(map[string]string, len(ts))
	for _, t := range ts {
		out[t.Name] = fmt.Sprint(t.Shape)
	}
	return out
}

func TestConvNetStateNames(t *testing.T) {
	got := stateShapes(mustBackbone(t, arch.ConvNet, 1, 64, 1).State())
	want := map[string]string{
		"conv1.weight": "[32 1 3 3]", "conv2.weight": "[64 32 3 3]", "conv3.weight": "[128 64 3 3]",
		"reduce.weight": "[64 128 1 1]", "reduce.bias": "[64]",
	}
	for bn, c := range map[string]int{"bn1": 32, "bn2": 64, "bn3": 128} {
		for _, field := range []string{"weight", "bias", "running_mean", "running_var"} {
			want[bn+"."+field] = fmt.Sprintf("[%d]", c)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("convnet state:\n got %v\nwant %v", got, want)
	}
}

func TestResNet18StateNames(t *testing.T) {
	got := stateShapes(mustBackbone(t, arch.ResNet18, 3, 64, 1).State())
	cases := []struct{ name, shape string }{
		{"conv1.weight", "[64 3 3 3]"},
		{"bn1.running_var", "[64]"},
		{"layer1.0.conv1.weight", "[64 64 3 3]"},
		{"layer1.1.bn2.bias", "[64]"},
		{"layer2.0.conv1.weight", "[128 64 3 3]"},
		{"layer2.0.downsample.0.weight", "[128 64 1 1]"},
		{"layer2.0.downsample.1.running_mean", "[128]"},
		{"layer3.0.downsample.0.weight", "[256 128 1 1]"},
		{"layer4.0.downsample.1.weight", "[512]"},
		{"layer4.1.conv2.weight", "[512 512 3 3]"},
		{"reduce.weight", "[64 512 1 1]"},
		{"reduce.bias", "[64]"},
	}
	for i, c := range cases {
		if got[c.name] != c.shape {
			t.Errorf("case %d: %s has shape %q, want %s", i, c.name, got[c.name], c.shape)
		}
	}
	for name := range got {
		if strings.HasPrefix(name, "layer1.0.downsample") || strings.Contains(name, ".1.downsample") {
			t.Errorf("unexpected downsample tensor %s", name)
		}
	}
}

func TestBackboneInit(t *testing.T) {
	b := mustBackbone(t, arch.ConvNet, 1, 64, 7)
	state := b.State()
	for i, c := range []struct {
		name string
		k, o int
	}{{"conv3.weight", 3, 128}, {"reduce.weight", 1, 64}} {
		w, _ := safetensors.Find(state, c.name)
		var mean, sq float64
		for _, v := range w.Data {
			mean += float64(v)
			sq += float64(v) * float64(v)
		}
		n := float64(len(w.Data))
		mean /= n
		std := math.Sqrt(sq/n - mean*mean)
		want := math.Sqrt(2 / float64(c.k*c.k*c.o))
		// The standard error of a sample std is want/sqrt(2n): 0.3% and 0.9% here; allow 3%.
		if math.Abs(std-want) > 0.03*want || math.Abs(mean) > 0.03*want {
			t.Errorf("case %d %s: mean %.5f std %.5f, want 0 and %.5f", i, c.name, mean, std, want)
		}
	}
	for _, tn := range state {
		var want float32 = -1
		switch {
		case strings.HasSuffix(tn.Name, "running_var"), strings.HasPrefix(tn.Name, "bn") && strings.HasSuffix(tn.Name, ".weight"):
			want = 1
		case strings.HasSuffix(tn.Name, ".bias"), strings.HasSuffix(tn.Name, "running_mean"):
			want = 0
		}
		if want >= 0 && slices.ContainsFunc(tn.Data, func(v float32) bool { return v != want }) {
			t.Errorf("%s is not all %v", tn.Name, want)
		}
	}
}

// TestBatchNormRunningStats checks that a training run moves the running statistics and an evaluation run
// uses them: evaluation features of an image do not depend on the rest of the batch, and change when the
// statistics change.
func TestBatchNormRunningStats(t *testing.T) {
	b := mustBackbone(t, arch.ConvNet, 1, 8, 5)
	x8 := fashionBatch(t, 8)
	x1 := tensor.New(tensor.WithShape(1, 1, 28, 28), tensor.WithBacking(append([]float32(nil), x8.Data().([]float32)[:784]...)))
	before := stateShapesData(b.State())

	train := buildBackboneRun(t, b, x8.Shape(), true, false)
	defer train.vm.Close()
	train.run(t, x8)
	after := stateShapesData(b.State())
	for _, name := range []string{"bn1.running_mean", "bn1.running_var", "bn3.running_mean", "bn3.running_var"} {
		if slices.Equal(before[name], after[name]) {
			t.Errorf("%s unchanged by a training run", name)
		}
	}
	if !slices.Equal(before["conv1.weight"], after["conv1.weight"]) {
		t.Error("a forward run changed conv1.weight")
	}

	eval8 := buildBackboneRun(t, b, x8.Shape(), false, false)
	defer eval8.vm.Close()
	eval1 := buildBackboneRun(t, b, x1.Shape(), false, false)
	defer eval1.vm.Close()
	f8 := eval8.run(t, x8)
	f1 := eval1.run(t, x1)
	if !slices.Equal(after["bn1.running_mean"], stateShapesData(b.State())["bn1.running_mean"]) {
		t.Error("an evaluation run changed bn1.running_mean")
	}
	for j := range f1 {
		if math.Abs(float64(f1[j]-f8[j])) > 1e-5 {
			t.Fatalf("evaluation feature %d of image 0: %v alone, %v in a batch of 8", j, f1[j], f8[j])
		}
	}
	// In training mode the same image gets different features in a different batch (batch statistics).
	train2 := buildBackboneRun(t, b, tensor.Shape{2, 1, 28, 28}, true, false)
	defer train2.vm.Close()
	x2 := tensor.New(tensor.WithShape(2, 1, 28, 28), tensor.WithBacking(append([]float32(nil), x8.Data().([]float32)[:2*784]...)))
	if t2 := train2.run(t, x2); slices.Equal(t2[:8], f8[:8]) {
		t.Error("training-mode features equal evaluation-mode ones")
	}

	// Quadrupling bn3's running variance halves its normalised output, so evaluation features change.
	state := b.State()
	for i := range state {
		if state[i].Name == "bn3.running_var" {
			for j := range state[i].Data {
				state[i].Data[j] *= 4
			}
		}
	}
	if err := b.SetState(state); err != nil {
		t.Fatal(err)
	}
	if g1 := eval1.run(t, x1); slices.Equal(g1, f1) {
		t.Error("evaluation features did not change with the running variance")
	}
}

func stateShapesData(ts []safetensors.Tensor) map[string][]float32 {
	out := make(map[string][]float32, len(ts))
	for _, t := range ts {
		out[t.Name] = t.Data
	}
	return out
}

// trainStep runs one training step of b on x with a momentum solver, changing weights and BN statistics.
func trainStep(t testing.TB, b *Backbone, x *tensor.Dense) {
	t.Helper()
	r := buildBackboneRun(t, b, x.Shape(), true, true)
	defer r.vm.Close()
	r.run(t, x)
	if err := G.NewMomentum(G.WithLearnRate(0.1)).Step(G.NodesToValueGrads(r.out.Params)); err != nil {
		t.Fatal(err)
	}
}

func TestBackboneCloneIsDeep(t *testing.T) {
	b := mustBackbone(t, arch.ConvNet, 1, 16, 9)
	x := fashionBatch(t, 4)
	trainStep(t, b, x)
	c := b.Clone()
	if c.Arch() != b.Arch() || c.InChannels() != 1 || c.FeatureDim() != 16 {
		t.Fatalf("clone is %s C=%d S=%d", c.Arch(), c.InChannels(), c.FeatureDim())
	}
	for i, p := range c.Params() {
		if p == b.Params()[i] {
			t.Fatalf("clone shares parameter tensor %d", i)
		}
	}
	evalC := buildBackboneRun(t, c, x.Shape(), false, false)
	defer evalC.vm.Close()
	before := evalC.run(t, x)
	wantState := c.State()

	trainStep(t, b, x) // changes b's weights and running statistics
	if got := evalC.run(t, x); !slices.Equal(got, before) {
		t.Error("training the original changed the clone's features")
	}
	if fmt.Sprint(c.State()) != fmt.Sprint(wantState) {
		t.Error("training the original changed the clone's state")
	}
	if fmt.Sprint(b.State()) == fmt.Sprint(wantState) {
		t.Error("training did not change the original")
	}
}

// TestCloneInSameGraph builds a backbone and its frozen clone into one graph, as Stage I does: they must get
// distinct nodes (gorgonia merges input nodes of equal name) and the clone must need no gradient.
func TestCloneInSameGraph(t *testing.T) {
	b := mustBackbone(t, arch.ConvNet, 1, 8, 11)
	trainStep(t, b, fashionBatch(t, 4))
	old := b.Clone()
	trainStep(t, b, fashionBatch(t, 4))
	x := fashionBatch(t, 4)

	g := G.NewGraph()
	in := G.NewTensor(g, tensor.Float32, 4, G.WithShape(x.Shape()...), G.WithName("x"))
	zNew, err := b.Build(g, in, true)
	if err != nil {
		t.Fatal(err)
	}
	zOld, err := old.Build(g, in, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range zNew.Params {
		if zNew.Params[i] == zOld.Params[i] {
			t.Fatalf("parameter node %d (%s) shared by the backbone and its clone", i, zNew.Params[i].Name())
		}
	}
	diff := G.Must(G.Sub(zNew.Output, zOld.Output))
	cost := G.Must(G.Mean(G.Must(G.Square(diff))))
	if _, err := G.Grad(cost, zNew.Params...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(zNew.Params...))
	defer vm.Close()
	if err := G.Let(in, x); err != nil {
		t.Fatal(err)
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := zOld.Output.Value().Data().([]float32)

	alone := buildBackboneRun(t, old, x.Shape(), false, false)
	defer alone.vm.Close()
	if want := alone.run(t, x); !slices.Equal(got, want) {
		t.Error("the clone's features in the shared graph differ from its features alone")
	}
	if c := cost.Value().Data().(float32); !(c > 0) {
		t.Errorf("distillation cost %v, want > 0 after training the new backbone", c)
	}
}

// TestSolverStepSharedAcrossGraphs checks the rule Build documents: a solver step through a training graph at
// batch 8 updates the weights in place, and an evaluation graph at batch 3 built earlier sees them.
func TestSolverStepSharedAcrossGraphs(t *testing.T) {
	solvers := []struct {
		name string
		new  func() G.Solver
	}{
		{"momentum", func() G.Solver { return G.NewMomentum(G.WithLearnRate(0.1), G.WithMomentum(0.9)) }},
		{"vanilla", func() G.Solver { return G.NewVanillaSolver(G.WithLearnRate(0.1)) }},
	}
	x8, x3 := fashionBatch(t, 8), fashionBatch(t, 3)
	for i, s := range solvers {
		b := mustBackbone(t, arch.ConvNet, 1, 8, 13)
		train := buildBackboneRun(t, b, x8.Shape(), true, true)
		eval := buildBackboneRun(t, b, x3.Shape(), false, false)
		before := eval.run(t, x3)
		weights := stateShapesData(b.State())

		train.run(t, x8)
		if err := s.new().Step(G.NodesToValueGrads(train.out.Params)); err != nil {
			t.Fatalf("case %d %s: %v", i, s.name, err)
		}
		for j, p := range b.Params() {
			if train.out.Params[j].Value() != G.Value(p) {
				t.Errorf("case %d %s: node %s is not bound to the backbone's tensor", i, s.name, train.out.Params[j].Name())
			}
		}
		for _, name := range []string{"conv1.weight", "bn2.weight", "reduce.bias"} {
			if slices.Equal(weights[name], stateShapesData(b.State())[name]) {
				t.Errorf("case %d %s: %s unchanged by the solver step", i, s.name, name)
			}
		}
		after := eval.run(t, x3)
		if slices.Equal(after, before) {
			t.Errorf("case %d %s: evaluation graph did not see the step", i, s.name)
		}
		fresh := buildBackboneRun(t, b, x3.Shape(), false, false)
		if want := fresh.run(t, x3); !slices.Equal(after, want) {
			t.Errorf("case %d %s: old evaluation graph differs from a graph built after the step", i, s.name)
		}
		train.vm.Close()
		eval.vm.Close()
		fresh.vm.Close()
	}
}

func TestBackboneSaveLoad(t *testing.T) {
	b := mustBackbone(t, arch.ConvNet, 1, 32, 17)
	x := fashionBatch(t, 16)
	trainStep(t, b, x)
	path := filepath.Join(t.TempDir(), "backbone.safetensors")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	l, err := LoadBackbone(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Arch() != arch.ConvNet || l.InChannels() != 1 || l.FeatureDim() != 32 {
		t.Fatalf("loaded %s C=%d S=%d", l.Arch(), l.InChannels(), l.FeatureDim())
	}
	want := buildBackboneRun(t, b, x.Shape(), false, false)
	defer want.vm.Close()
	got := buildBackboneRun(t, l, x.Shape(), false, false)
	defer got.vm.Close()
	if w, g := want.run(t, x), got.run(t, x); !slices.Equal(w, g) {
		t.Error("loaded backbone gives different features on a Fashion-MNIST batch")
	}
}

func TestResNet18StateRoundTrip(t *testing.T) {
	trained, err := NewBackboneWidth(arch.ResNet18ImageNet, 8, 3, 16, rand.New(rand.NewPCG(5, 1)))
	if err != nil {
		t.Fatal(err)
	}
	trainStep(t, trained, randomImages(rand.New(rand.NewPCG(6, 7)), 2, 3, 32, 32))
	for i, b := range []*Backbone{mustBackbone(t, arch.ResNet18, 3, 64, 19), trained} {
		path := filepath.Join(t.TempDir(), "resnet.safetensors")
		if err := b.Save(path); err != nil {
			t.Fatal(err)
		}
		l, err := LoadBackbone(path)
		if err != nil {
			t.Fatal(err)
		}
		if l.Arch() != b.Arch() || l.Width() != b.Width() {
			t.Errorf("case %d: loaded %s of width %d, saved %s of width %d", i, l.Arch(), l.Width(), b.Arch(), b.Width())
		}
		if !slices.EqualFunc(b.State(), l.State(), func(a, b safetensors.Tensor) bool {
			return a.Name == b.Name && slices.Equal(a.Shape, b.Shape) && slices.Equal(a.Data, b.Data)
		}) {
			t.Errorf("case %d: %s state differs after a save/load round trip", i, b.Arch())
		}
	}
}

func TestBackboneSetStateErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func([]safetensors.Tensor) []safetensors.Tensor
		want   string
	}{
		{"missing", func(ts []safetensors.Tensor) []safetensors.Tensor {
			return slices.DeleteFunc(ts, func(t safetensors.Tensor) bool { return t.Name == "bn2.running_var" })
		}, `missing tensor "bn2.running_var"`},
		{"shape", func(ts []safetensors.Tensor) []safetensors.Tensor {
			ts[0].Shape = []int{32, 3, 3, 1}
			return ts
		}, `"conv1.weight" has shape [32 3 3 1], want [32 1 3 3]`},
		{"nan", func(ts []safetensors.Tensor) []safetensors.Tensor {
			i := slices.IndexFunc(ts, func(t safetensors.Tensor) bool { return t.Name == "reduce.bias" })
			ts[i].Data[2] = float32(math.NaN())
			return ts
		}, `"reduce.bias" holds NaN at index 2`},
		{"negative variance", func(ts []safetensors.Tensor) []safetensors.Tensor {
			i := slices.IndexFunc(ts, func(t safetensors.Tensor) bool { return t.Name == "bn1.running_var" })
			ts[i].Data[0] = -1
			return ts
		}, `"bn1.running_var" holds negative variance -1`},
		{"short data", func(ts []safetensors.Tensor) []safetensors.Tensor {
			ts[1].Data = ts[1].Data[:3]
			return ts
		}, "has 3 values, want 32"},
		{"unexpected", func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, safetensors.Tensor{Name: "fc.weight", Shape: []int{1}, Data: []float32{0}})
		}, `unexpected tensor "fc.weight"`},
		{"duplicate", func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, ts[0])
		}, `tensor "conv1.weight" appears twice`},
	}
	b := mustBackbone(t, arch.ConvNet, 1, 8, 21)
	want := fmt.Sprint(b.State())
	for i, c := range cases {
		donor := mustBackbone(t, arch.ConvNet, 1, 8, 22)
		err := b.SetState(c.mutate(donor.State()))
		if !errors.Is(err, ErrBadState) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("case %d (%s): error %v, want ErrBadState containing %s", i, c.name, err, c.want)
		}
		if fmt.Sprint(b.State()) != want {
			t.Errorf("case %d (%s): failed SetState changed the backbone", i, c.name)
		}
	}
	if err := b.SetState(mustBackbone(t, arch.ResNet18, 1, 8, 1).State()); !errors.Is(err, ErrBadState) {
		t.Errorf("resnet18 state into a convnet: error %v, want ErrBadState", err)
	}
}

func TestLoadBackboneErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	b := mustBackbone(t, arch.ConvNet, 1, 8, 23)
	if err := b.Save(good); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, content []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	saveWith := func(name string, meta map[string]string) string {
		p := filepath.Join(dir, name)
		if err := safetensors.WriteFile(p, b.State(), meta); err != nil {
			t.Fatal(err)
		}
		return p
	}
	m, err := NewMapper(arch.Linear, 8, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	mapperPath := filepath.Join(dir, "mapper.safetensors")
	if err := m.Save(mapperPath); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path     string
		badState bool
		want     string
	}{
		{write("truncated.safetensors", raw[:len(raw)/2]), false, "truncated.safetensors"},
		{write("garbage.safetensors", []byte("not a tensor file")), false, "garbage.safetensors"},
		{filepath.Join(dir, "absent.safetensors"), false, "absent.safetensors"},
		{mapperPath, true, `metadata bicyc.model is "mapper", want "backbone"`},
		{saveWith("arch.safetensors", map[string]string{metaModel: "backbone", "arch": "vgg", "in_channels": "1", "feature_dim": "8"}), true, `unknown backbone architecture "vgg"`},
		{saveWith("channels.safetensors", map[string]string{metaModel: "backbone", "arch": "convnet", "in_channels": "3", "feature_dim": "8"}), true, `"conv1.weight" has shape [32 1 3 3], want [32 3 3 3]`},
		{saveWith("dim.safetensors", map[string]string{metaModel: "backbone", "arch": "convnet", "in_channels": "1", "feature_dim": "x"}), true, `feature_dim is "x"`},
	}
	for i, c := range cases {
		_, err := LoadBackbone(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrBadState) != c.badState {
			t.Errorf("case %d: error %v, want one containing %s (ErrBadState %v)", i, err, c.want, c.badState)
		}
	}
}

func TestNewBackboneErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		arch arch.Backbone
		c, s int
	}{{"vgg", 1, 8}, {arch.ConvNet, 0, 8}, {arch.ResNet18, 3, 0}}
	for i, c := range cases {
		if _, err := NewBackbone(c.arch, c.c, c.s, rng); err == nil {
			t.Errorf("case %d: NewBackbone(%q, %d, %d): got nil error", i, c.arch, c.c, c.s)
		}
	}
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 28, 28), G.WithName("x"))
	if _, err := mustBackbone(t, arch.ConvNet, 1, 8, 1).Build(g, x, false); err == nil {
		t.Error("Build with 3 channels for a 1-channel backbone: got nil error")
	}
}

// TestConvLayersImageNet checks the geometry a benchmark counts work from: torchvision's ResNet-18 at 224x224
// has 1.814 G multiply-adds, of which the fc layer (not here) 0.5 M; the reduction here adds 512·64·7·7.
func TestConvLayersImageNet(t *testing.T) {
	b, err := NewBackbone(arch.ResNet18ImageNet, 3, 64, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FreezeStages(4); err != nil {
		t.Fatal(err)
	}
	layers := b.ConvLayers(224, 224)
	macs := 0
	byName := map[string]ConvLayer{}
	for _, l := range layers {
		macs += l.MACs()
		byName[l.Name] = l
	}
	if want := 1813561344 + 512*64*7*7; macs != want {
		t.Errorf("MACs %d, want %d", macs, want)
	}
	if l := byName["conv1"]; l.OutHeight != 112 || l.NeedsInputGrad || !l.Frozen {
		t.Errorf("conv1 %+v: want 112x112, frozen, no input gradient", l)
	}
	if l := byName["layer1.0.conv1"]; l.OutHeight != 56 || l.NeedsInputGrad {
		t.Errorf("layer1.0.conv1 %+v: want 56x56 after the max-pool, no input gradient", l)
	}
	for name, want := range map[string]bool{"layer4.0.conv1": false, "layer4.0.downsample.0": false, "layer4.0.conv2": true,
		"layer4.1.conv1": true, "reduce": true} {
		if l := byName[name]; l.Frozen || l.NeedsInputGrad != want || l.OutHeight != 7 {
			t.Errorf("%s %+v: want trainable, 7x7, input gradient %v", name, l, want)
		}
	}
	if l := byName["layer3.1.conv2"]; !l.Frozen || l.NeedsInputGrad {
		t.Errorf("layer3.1.conv2 %+v: want frozen without input gradient", l)
	}
}
