package export

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/export/onnxpb"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// featureTolerance is the task's bound on |ONNX Runtime - float64 reference|
// for backbone and adapter outputs.
const featureTolerance = 1e-4

func TestBackboneConvNetMatchesReference(t *testing.T) {
	const n, s = 3, 16
	rng := rand.New(rand.NewPCG(1, 2))
	state := randomConvNet(rng, 1, s)
	shape := BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 28, Width: 28, FeatureDim: s}
	model, err := Backbone(shape, state)
	if err != nil {
		t.Fatal(err)
	}
	images := fashionImages(t, n)
	got := runModel(t, model, []string{bundle.TensorImage}, [][]float32{images}, [][]int64{{n, 1, 28, 28}}, []string{bundle.TensorFeatures})[0].([]float32)
	var want []float64
	for i := range n {
		img := act{c: 1, h: 28, w: 28, v: make([]float64, 28*28)}
		for j := range img.v {
			img.v[j] = float64(images[i*28*28+j])
		}
		want = append(want, refConvNet(img, state, s)...)
	}
	d := maxAbsDiff(t, got, want)
	t.Logf("convnet: max |onnx - reference| = %.3g over %d features", d, len(want))
	if d > featureTolerance {
		t.Fatalf("convnet features differ from the reference by %g > %g", d, featureTolerance)
	}
	if spread := slices.Max(want) - slices.Min(want); spread < 0.1 {
		t.Fatalf("reference features span only %g: the test would not notice a wrong BN fold", spread)
	}
}

func TestBackboneResNet18MatchesReference(t *testing.T) {
	// 16x16 keeps the float64 reference fast; every stride-2 stage still
	// halves the map (16, 8, 4, 2), so the shortcuts are exercised.
	const n, c, hw, s = 2, 3, 16, 8
	rng := rand.New(rand.NewPCG(3, 4))
	state := randomResNet18(rng, c, s)
	shape := BackboneShape{Arch: arch.ResNet18, InChannels: c, Height: hw, Width: hw, FeatureDim: s}
	model, err := Backbone(shape, state)
	if err != nil {
		t.Fatal(err)
	}
	images := make([]float32, n*c*hw*hw)
	for i := range images {
		images[i] = float32(rng.NormFloat64())
	}
	got := runModel(t, model, []string{bundle.TensorImage}, [][]float32{images}, [][]int64{{n, c, hw, hw}}, []string{bundle.TensorFeatures})[0].([]float32)
	var want []float64
	per := c * hw * hw
	for i := range n {
		img := act{c: c, h: hw, w: hw, v: make([]float64, per)}
		for j := range per {
			img.v[j] = float64(images[i*per+j])
		}
		want = append(want, refResNet18(img, state, s)...)
	}
	d := maxAbsDiff(t, got, want)
	t.Logf("resnet18: max |onnx - reference| = %.3g over %d features", d, len(want))
	if d > featureTolerance {
		t.Fatalf("resnet18 features differ from the reference by %g > %g", d, featureTolerance)
	}
}

func TestAdapterMatchesReference(t *testing.T) {
	const n, s = 4, 8
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, n*s)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	mlp := []safetensors.Tensor{
		randomTensor(rng, "fc1.weight", []int{32 * s, s}, 0.5, false),
		randomTensor(rng, "fc1.bias", []int{32 * s}, 0.5, false),
		randomTensor(rng, "fc2.weight", []int{s, 32 * s}, 0.1, false),
		randomTensor(rng, "fc2.bias", []int{s}, 0.1, false),
	}
	linear := []safetensors.Tensor{randomTensor(rng, "weight", []int{s, s}, 0.5, false)}
	linearBias := append(slices.Clone(linear), randomTensor(rng, "bias", []int{s}, 0.5, false))
	refLinear := func(z []float64, bias bool) []float64 {
		w := refTensor(linear, "weight")
		y := make([]float64, s)
		if bias {
			y = refTensor(linearBias, "bias")
		}
		for r := range s {
			for c := range s {
				y[r] += w[r*s+c] * z[c]
			}
		}
		return y
	}
	for i, tc := range []struct {
		kind  arch.Mapper
		state []safetensors.Tensor
		ref   func([]float64) []float64
	}{
		{arch.MLP, mlp, func(z []float64) []float64 { return refMLP(z, mlp) }},
		{arch.ResidualMLP, mlp, func(z []float64) []float64 {
			y := refMLP(z, mlp)
			for c := range y {
				y[c] += z[c]
			}
			return y
		}},
		{arch.Linear, linear, func(z []float64) []float64 { return refLinear(z, false) }},
		{arch.LinearBias, linearBias, func(z []float64) []float64 { return refLinear(z, true) }},
	} {
		model, err := Adapter(tc.kind, s, tc.state)
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, tc.kind, err)
		}
		got := runModel(t, model, []string{bundle.TensorFeaturesOld}, [][]float32{x}, [][]int64{{n, s}}, []string{bundle.TensorFeatures})[0].([]float32)
		var want []float64
		for r := range n {
			z := make([]float64, s)
			for c := range s {
				z[c] = float64(x[r*s+c])
			}
			want = append(want, tc.ref(z)...)
		}
		d := maxAbsDiff(t, got, want)
		t.Logf("case %d (%s): max |onnx - reference| = %.3g", i, tc.kind, d)
		if d > featureTolerance {
			t.Errorf("case %d (%s): adapter output differs from the reference by %g > %g", i, tc.kind, d, featureTolerance)
		}
	}
}

// checkScores compares the scores output [n, classes] with the reference
// want, relative to their size (they are sums of S squares).
func checkScores(t *testing.T, label string, outs []any, want []float64, n, classes int) {
	t.Helper()
	scores := outs[0].([]float32)
	if len(scores) != n*classes {
		t.Fatalf("%s: %d scores, want %d", label, len(scores), n*classes)
	}
	var worst float64
	for i, w := range want {
		worst = math.Max(worst, math.Abs(float64(scores[i])-w)/math.Max(1, math.Abs(w)))
	}
	t.Logf("%s: max relative score error %.3g", label, worst)
	if worst > 1e-5 {
		t.Errorf("%s: scores differ from the reference by %g (relative)", label, worst)
	}
}

// argmin is the class with the smallest score of a row, the lower index on
// ties: the prediction infer makes from a scores row.
func argmin(row []float32) int {
	best := 0
	for c, v := range row {
		if v < row[best] {
			best = c
		}
	}
	return best
}

func TestClassifierMatchesReference(t *testing.T) {
	const n, s = 5, 6
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, n*s)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 2)
	}
	for i, tc := range []struct {
		classes   int
		normalize bool
	}{
		{10, true},
		{10, false},
		{3, true},
		{7, false},
	} {
		tables := randomTables(rng, tc.classes, s, tc.normalize)
		model, err := classgraph.Classifier(tables)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		outs := runModel(t, model, []string{bundle.TensorFeatures}, [][]float32{x}, [][]int64{{n, s}},
			[]string{bundle.TensorScores})
		var want []float64
		for r := range n {
			z := make([]float64, s)
			for c := range s {
				z[c] = float64(x[r*s+c])
			}
			want = append(want, refScores(z, tables)...)
		}
		checkScores(t, fmt.Sprintf("case %d", i), outs, want, n, tc.classes)
	}
}

func TestModelFusesBackboneAndClassifier(t *testing.T) {
	const n, s, classes = 4, 12, 10
	rng := rand.New(rand.NewPCG(9, 10))
	state := randomConvNet(rng, 1, s)
	shape := BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 28, Width: 28, FeatureDim: s}
	tables := randomTables(rng, classes, s, true)
	model, err := Model(shape, state, tables)
	if err != nil {
		t.Fatal(err)
	}
	images := fashionImages(t, n)
	outs := runModel(t, model, []string{bundle.TensorImage}, [][]float32{images}, [][]int64{{n, 1, 28, 28}},
		[]string{bundle.TensorScores})
	var want []float64
	for i := range n {
		img := act{c: 1, h: 28, w: 28, v: make([]float64, 28*28)}
		for j := range img.v {
			img.v[j] = float64(images[i*28*28+j])
		}
		want = append(want, refScores(refConvNet(img, state, s), tables)...)
	}
	checkScores(t, "model", outs, want, n, classes)
}

// TestCheckerAcceptsEveryModel runs onnx.checker.check_model(full_check=True)
// on each kind of exported file.
func TestCheckerAcceptsEveryModel(t *testing.T) {
	const s = 8
	rng := rand.New(rand.NewPCG(11, 12))
	conv := BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 28, Width: 28, FeatureDim: s}
	res := BackboneShape{Arch: arch.ResNet18, InChannels: 3, Height: 32, Width: 32, FeatureDim: s}
	convState, resState := randomConvNet(rng, 1, s), randomResNet18(rng, 3, s)
	tables := randomTables(rng, 4, s, true)
	models := map[string][]byte{}
	add := func(name string, b []byte, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		models[name] = b
	}
	b, err := Backbone(conv, convState)
	add("backbone_convnet.onnx", b, err)
	b, err = Backbone(res, resState)
	add("backbone_resnet18.onnx", b, err)
	// The ImageNet stem: the same tensors with a 7x7 conv1, then a padded MaxPool.
	imageNetState := append([]safetensors.Tensor{randomTensor(rng, "conv1.weight", []int{64, 3, 7, 7}, 0.1, false)}, resState[1:]...)
	b, err = Backbone(BackboneShape{Arch: arch.ResNet18ImageNet, InChannels: 3, Height: 64, Width: 48, FeatureDim: s}, imageNetState)
	add("backbone_resnet18_imagenet.onnx", b, err)
	b, err = Adapter(arch.MLP, s, []safetensors.Tensor{
		randomTensor(rng, "fc1.weight", []int{32 * s, s}, 1, false), randomTensor(rng, "fc1.bias", []int{32 * s}, 1, false),
		randomTensor(rng, "fc2.weight", []int{s, 32 * s}, 1, false), randomTensor(rng, "fc2.bias", []int{s}, 1, false)})
	add("adapter_mlp.onnx", b, err)
	b, err = Adapter(arch.Linear, s, []safetensors.Tensor{randomTensor(rng, "weight", []int{s, s}, 1, false)})
	add("adapter_linear.onnx", b, err)
	b, err = classgraph.Classifier(tables)
	add("classifier.onnx", b, err)
	tables.Normalize = false
	b, err = classgraph.Classifier(tables)
	add("classifier_plain.onnx", b, err)
	b, err = Model(res, resState, tables)
	add("model.onnx", b, err)
	b, err = classgraph.Classifier(randomTables(rng, classgraph.ExpandedMinClasses, s, true))
	add("classifier_expanded.onnx", b, err)
	checkONNX(t, models)
	// A model directory's classifier files, both forms: the graphs read
	// their table from classifier.data beside them.
	for _, k := range []int{4, classgraph.ExpandedMinClasses} {
		files, err := classgraph.Files(randomTables(rng, k, s, true), models["backbone_convnet.onnx"], 0)
		if err != nil {
			t.Fatal(err)
		}
		checkONNX(t, files)
	}
}

func TestExportIsDeterministicAndDeclaresBatchDim(t *testing.T) {
	const s = 4
	shape := BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 8, Width: 8, FeatureDim: s}
	state := randomConvNet(rand.New(rand.NewPCG(13, 14)), 1, s)
	tables := randomTables(rand.New(rand.NewPCG(15, 16)), 3, s, true)
	a, err := Model(shape, state, tables)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Model(shape, state, tables)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two exports of the same weights differ")
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(a, &m); err != nil {
		t.Fatal(err)
	}
	if m.GetIrVersion() != onnxgraph.IRVersion || len(m.GetOpsetImport()) != 1 || m.GetOpsetImport()[0].GetVersion() != onnxgraph.OpsetVersion {
		t.Fatalf("ir %d opsets %v, want ir %d opset %d", m.GetIrVersion(), m.GetOpsetImport(), onnxgraph.IRVersion, onnxgraph.OpsetVersion)
	}
	for i, v := range append(m.GetGraph().GetInput(), m.GetGraph().GetOutput()...) {
		if d := v.GetType().GetTensorType().GetShape().GetDim()[0].GetDimParam(); d != "N" {
			t.Errorf("case %d: %s has batch dim %q, want \"N\"", i, v.GetName(), d)
		}
	}
	allowed := map[string]bool{"Conv": true, "Gemm": true, "Relu": true, "MaxPool": true, "GlobalAveragePool": true,
		"Erf": true, "Mul": true, "Add": true, "Div": true, "Reshape": true, "ReduceSum": true, "ReduceL2": true,
		"Max": true, "Sub": true, "Unsqueeze": true, "Gather": true, "Concat": true}
	for _, n := range m.GetGraph().GetNode() {
		if !allowed[n.GetOpType()] {
			t.Errorf("operator %s is outside the TensorRT-supported set", n.GetOpType())
		}
	}
}

func TestBadStateIsRejected(t *testing.T) {
	const s = 4
	shape := BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 8, Width: 8, FeatureDim: s}
	good := func() []safetensors.Tensor { return randomConvNet(rand.New(rand.NewPCG(17, 18)), 1, s) }
	edit := func(name string, f func(*safetensors.Tensor)) []safetensors.Tensor {
		ts := good()
		for i := range ts {
			if ts[i].Name == name {
				f(&ts[i])
			}
		}
		return ts
	}
	for i, tc := range []struct {
		shape BackboneShape
		state []safetensors.Tensor
		want  string
	}{
		{shape, edit("bn2.running_mean", func(t *safetensors.Tensor) { t.Name = "bn2.mean" }), `"bn2.running_mean" is missing`},
		{shape, edit("conv3.weight", func(t *safetensors.Tensor) { t.Shape = []int{128, 64, 9} }), `"conv3.weight" has shape [128 64 9], want [128 64 3 3]`},
		{shape, edit("reduce.bias", func(t *safetensors.Tensor) { t.Data[2] = float32(math.NaN()) }), `"reduce.bias" has non-finite value NaN at index 2`},
		{shape, edit("bn1.running_var", func(t *safetensors.Tensor) { t.Data[0] = -1 }), `"bn1.running_var" has negative variance -1 at channel 0`},
		{shape, edit("conv1.weight", func(t *safetensors.Tensor) { t.Data = t.Data[:5] }), `"conv1.weight" has 5 values, want 288`},
		{shape, append(good(), good()[0]), `"conv1.weight" appears twice`},
		{BackboneShape{Arch: "vgg", InChannels: 1, Height: 8, Width: 8, FeatureDim: s}, good(), `unknown backbone architecture "vgg"`},
		{BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 3, Width: 8, FeatureDim: s}, good(), "image sides >= 4"},
		{BackboneShape{Arch: arch.ConvNet, InChannels: 3, Height: 8, Width: 8, FeatureDim: s}, good(), `"conv1.weight" has shape [32 1 3 3], want [32 3 3 3]`},
	} {
		_, err := Backbone(tc.shape, tc.state)
		if !errors.Is(err, ErrState) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("case %d: error %v, want ErrState containing %q", i, err, tc.want)
		}
	}
}

func TestBadTablesAreRejected(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for i, tc := range []struct {
		edit func(*gauss.ClassifierTables)
		want string
	}{
		{func(c *gauss.ClassifierTables) { c.Whiten = c.Whiten[1:] }, "classifier whiten has 47 values, want 48"},
		{func(c *gauss.ClassifierTables) { c.Bias[1] = float32(math.Inf(1)) }, "classifier bias has non-finite value +Inf at index 1"},
		{func(c *gauss.ClassifierTables) { c.K = 0 }, "K=0 classes"},
	} {
		tables := randomTables(rng, 3, 4, true)
		tc.edit(&tables)
		_, err := classgraph.Classifier(tables)
		if !errors.Is(err, classgraph.ErrTables) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("case %d: error %v, want ErrTables containing %q", i, err, tc.want)
		}
	}
}
