package pretrained

import (
	"flag"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/export"
	"github.com/bicyc/bicyc/export/onnxpb"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/models"
	ort "github.com/yalue/onnxruntime_go"
	"gonum.org/v1/netlib/blas/netlib"
	"google.golang.org/protobuf/proto"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fullResNet18 names a full-size torchvision ResNet-18 written by testdata/make_resnet18.py --full; `make
// bench-pretrained` makes one and runs TestFullResNet18MatchesOnnxRuntime on it at 224x224.
var fullResNet18 = flag.String("resnet18-onnx", "", "full-size torchvision ResNet-18 ONNX file for TestFullResNet18MatchesOnnxRuntime")

func TestMain(m *testing.M) {
	G.Use(netlib.Implementation{})
	kernels.RunTests(m)
}

// fixture is the small committed ResNet-18 (stage widths 4, 8, 16, 32; testdata/make_resnet18.py).
const fixture = "testdata/resnet18_w4.onnx"

// featureTolerance is the bound on |gorgonia - ONNX Runtime| for the pooled features.
const featureTolerance = 1e-4

// newBackbone returns an ImageNet ResNet-18 of the given width whose reduction is the identity on its 8*width
// channels, so that its features are the pooled features of the last stage, the input of torchvision's fc.
func newBackbone(t *testing.T, width int) *models.Backbone {
	t.Helper()
	b, err := models.NewBackboneWidth(arch.ResNet18ImageNet, width, 3, 8*width, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	state := b.State()
	for i, ts := range state {
		switch ts.Name {
		case "reduce.weight":
			clear(ts.Data)
			for c := range 8 * width {
				ts.Data[c*8*width+c] = 1
			}
		case "reduce.bias":
			clear(state[i].Data)
		}
	}
	if err := b.SetState(state); err != nil {
		t.Fatal(err)
	}
	return b
}

// photos returns the real photos in Go's image testdata, resized (nearest neighbour) to side x side RGB and
// normalised with the ImageNet mean and standard deviation, as a [2,3,side,side] batch.
func photos(t *testing.T, side int) []float32 {
	t.Helper()
	mean, std := [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
	dir := filepath.Join(runtime.GOROOT(), "src", "image", "testdata")
	var out []float32
	for _, name := range []string{"video-001.jpeg", "video-005.gray.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := image.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r := img.Bounds()
		plane := make([]float32, 3*side*side)
		for y := range side {
			for x := range side {
				cr, cg, cb, _ := img.At(r.Min.X+x*r.Dx()/side, r.Min.Y+y*r.Dy()/side).RGBA()
				for c, v := range []uint32{cr, cg, cb} {
					plane[(c*side+y)*side+x] = (float32(v>>8)/255 - mean[c]) / std[c]
				}
			}
		}
		out = append(out, plane...)
	}
	return out
}

// gorgoniaFeatures runs b in evaluation mode on the [n,3,side,side] batch x.
func gorgoniaFeatures(t *testing.T, b *models.Backbone, x []float32, side int) []float32 {
	t.Helper()
	g := G.NewGraph()
	n := len(x) / (3 * side * side)
	in := G.NewTensor(g, tensor.Float32, 4, G.WithShape(n, 3, side, side), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(n, 3, side, side), tensor.WithBacking(slices.Clone(x)))))
	built, err := b.Build(g, in, false)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return slices.Clone(built.Output.Value().Data().([]float32))
}

// runtimeFeatures runs the ONNX model on x with ONNX Runtime and returns its output named output.
func runtimeFeatures(t *testing.T, model []byte, input, output string, x []float32, side int) []float32 {
	t.Helper()
	if _, err := infer.InitRuntime(""); err != nil {
		t.Fatal(err)
	}
	sess, err := ort.NewDynamicAdvancedSessionWithONNXData(model, []string{input}, []string{output}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Destroy()
	in, err := ort.NewTensor(ort.NewShape(int64(len(x)/(3*side*side)), 3, int64(side), int64(side)), x)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Destroy()
	out := []ort.Value{nil}
	if err := sess.Run([]ort.Value{in}, out); err != nil {
		t.Fatal(err)
	}
	defer out[0].Destroy()
	return slices.Clone(out[0].(*ort.Tensor[float32]).GetData())
}

// withPooledOutput returns the torchvision model with the input of fc (the flattened, pooled features of the
// last stage) as its only output, named "pooled".
func withPooledOutput(t *testing.T, raw []byte) []byte {
	t.Helper()
	m := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(raw, m); err != nil {
		t.Fatal(err)
	}
	for _, n := range m.GetGraph().GetNode() {
		if n.GetOpType() == "Gemm" && len(n.GetInput()) > 1 && n.GetInput()[1] == "fc.weight" {
			flat := n.GetInput()[0]
			m.Graph.Node = append(m.Graph.Node, &onnxpb.NodeProto{OpType: proto.String("Identity"), Input: []string{flat}, Output: []string{"pooled"}})
			m.Graph.Output = []*onnxpb.ValueInfoProto{{Name: proto.String("pooled"), Type: &onnxpb.TypeProto{
				Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_FLOAT))}}}}}
			out, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatal("no Gemm node reads fc.weight")
	return nil
}

func maxAbsDiff(t *testing.T, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d features against %d", len(a), len(b))
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// checkImport imports the file at path into a backbone of the given width and compares its pooled features
// on real photos with ONNX Runtime running the file itself, and with ONNX Runtime running bicyc's own export
// of the imported backbone.
func checkImport(t *testing.T, path string, width, side int) {
	b := newBackbone(t, width)
	if err := ResNet18(path, b); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x := photos(t, side)
	want := runtimeFeatures(t, withPooledOutput(t, raw), "input", "pooled", x, side)
	got := gorgoniaFeatures(t, b, x, side)
	d := maxAbsDiff(t, got, want)
	t.Logf("%s at %dx%d: max |gorgonia - onnx runtime| = %.3g over %d features", filepath.Base(path), side, side, d, len(want))
	if d > featureTolerance || slices.Equal(want[:8*width], want[8*width:]) {
		t.Fatalf("imported features differ from ONNX Runtime's by %g > %g (or the two photos gave equal features)", d, featureTolerance)
	}
	shape := export.BackboneShape{Arch: arch.ResNet18ImageNet, InChannels: 3, Height: side, Width: side, FeatureDim: 8 * width}
	exported, err := export.Backbone(shape, b.State())
	if err != nil {
		t.Fatal(err)
	}
	d = maxAbsDiff(t, runtimeFeatures(t, exported, "image", "features", x, side), want)
	t.Logf("bicyc's export at %dx%d: max |export - onnx runtime on the original| = %.3g", side, side, d)
	if d > featureTolerance {
		t.Fatalf("exported backbone differs from the original by %g > %g", d, featureTolerance)
	}
}

func TestResNet18MatchesOnnxRuntime(t *testing.T) {
	checkImport(t, fixture, 4, 64)
}

// TestFullResNet18MatchesOnnxRuntime is the full-size check at 224x224 (about 20 s on 2 cores); it runs when
// -resnet18-onnx names a file (make bench-pretrained).
func TestFullResNet18MatchesOnnxRuntime(t *testing.T) {
	if *fullResNet18 == "" {
		t.Skip("set -resnet18-onnx (make bench-pretrained writes and checks a full-size file)")
	}
	checkImport(t, *fullResNet18, models.ResNetWidth, 224)
}

// TestResNet18KeepsReduction checks that the import leaves the 1x1 reduction as it was and fills every other
// tensor from the file.
func TestResNet18KeepsReduction(t *testing.T) {
	b, err := models.NewBackboneWidth(arch.ResNet18ImageNet, 4, 3, 16, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]float32{}
	for _, ts := range b.State() {
		before[ts.Name] = ts.Data
	}
	if err := ResNet18(fixture, b); err != nil {
		t.Fatal(err)
	}
	for _, ts := range b.State() {
		same := slices.Equal(before[ts.Name], ts.Data)
		if reduce := ts.Name == "reduce.weight" || ts.Name == "reduce.bias"; same != reduce {
			t.Errorf("%s: unchanged %t by the import", ts.Name, same)
		}
	}
}
