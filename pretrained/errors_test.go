package pretrained

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/export/onnxpb"
	"github.com/bicyc/bicyc/models"
)

// editFixture writes a copy of the committed fixture changed by edit into dir, and returns its path.
func editFixture(t *testing.T, dir, name string, edit func(m *onnxpb.ModelProto, byName map[string]*onnxpb.TensorProto)) string {
	t.Helper()
	raw, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	m := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(raw, m); err != nil {
		t.Fatal(err)
	}
	byName := map[string]*onnxpb.TensorProto{}
	for _, init := range m.GetGraph().GetInitializer() {
		byName[init.GetName()] = init
	}
	edit(m, byName)
	out, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestResNet18BadFiles pins one error per problem: its sentinel, the file's name in the message, the words
// that say what is wrong and how to fix it, and a backbone left as it was.
func TestResNet18BadFiles(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "image", "testdata", "video-001.png"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path  string
		width int
		arch  arch.Backbone
		want  error
		words []string
	}{
		{path: filepath.Join(dir, "missing.onnx"), want: os.ErrNotExist},
		{path: writeFile(t, dir, "empty.onnx", nil), want: ErrNotONNX, words: []string{"empty"}},
		{path: writeFile(t, dir, "truncated.onnx", good[:len(good)/2]), want: ErrNotONNX, words: []string{"complete"}},
		{path: writeFile(t, dir, "photo.onnx", png), want: ErrNotONNX},
		{path: "testdata/resnet18_w2_folded.onnx", width: 2, want: ErrFoldedBatchNorm,
			words: []string{"onnx::Conv_", "bn1.running_var", "TrainingMode.PRESERVE", "do_constant_folding=False"}},
		{path: editFixture(t, dir, "missing_tensor.onnx", func(m *onnxpb.ModelProto, byName map[string]*onnxpb.TensorProto) {
			inits := m.Graph.Initializer[:0]
			for _, init := range m.Graph.Initializer {
				if init.GetName() != "layer3.1.bn2.running_mean" {
					inits = append(inits, init)
				}
			}
			m.Graph.Initializer = inits
		}), want: ErrTensor, words: []string{"layer3.1.bn2.running_mean", "missing"}},
		{path: editFixture(t, dir, "wrong_shape.onnx", func(_ *onnxpb.ModelProto, byName map[string]*onnxpb.TensorProto) {
			w := byName["layer2.0.conv1.weight"] // [8,4,3,3] made [8,4,1,1]
			w.Dims, w.RawData = []int64{8, 4, 1, 1}, w.RawData[:4*8*4]
		}), want: ErrTensor, words: []string{"layer2.0.conv1.weight", "[8 4 1 1]", "[8 4 3 3]"}},
		{path: fixture, width: 8, want: ErrTensor, words: []string{"conv1.weight", "[4 3 7 7]", "[8 3 7 7]", "model.width to 4"}},
		{path: editFixture(t, dir, "external.onnx", func(_ *onnxpb.ModelProto, byName map[string]*onnxpb.TensorProto) {
			w := byName["layer4.1.conv2.weight"]
			w.RawData = nil
			w.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
			w.ExternalData = []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String("weights.bin")}}
		}), want: ErrExternalData, words: []string{"save_as_external_data=False"}},
		{path: editFixture(t, dir, "float16.onnx", func(_ *onnxpb.ModelProto, byName map[string]*onnxpb.TensorProto) {
			w := byName["bn1.weight"]
			w.DataType = proto.Int32(int32(onnxpb.TensorProto_FLOAT16))
			w.RawData = w.RawData[:len(w.RawData)/2]
		}), want: ErrFloat16, words: []string{"model.float()"}},
		{path: editFixture(t, dir, "nan.onnx", func(_ *onnxpb.ModelProto, byName map[string]*onnxpb.TensorProto) {
			copy(byName["layer1.0.bn1.running_var"].RawData, []byte{0, 0, 0xc0, 0x7f}) // a float32 NaN
		}), want: models.ErrBadState, words: []string{"layer1.0.bn1.running_var"}},
		{path: "testdata/resnet34_w2.onnx", width: 2, want: ErrArchitecture, words: []string{"layer1.2.", "resnet18 only"}},
		{path: fixture, arch: arch.ResNet18, want: ErrArchitecture, words: []string{"resnet18-imagenet"}},
	}
	for i, c := range cases {
		checkBadFile(t, i, c.path, c.width, c.arch, c.want, c.words)
	}
}

// checkBadFile imports path into a fresh backbone of the given width (0:
// the fixture's 4) and architecture ("": resnet18-imagenet) and checks that
// the error wraps want, names the file and every word, and that the
// backbone is unchanged.
func checkBadFile(t *testing.T, i int, path string, width int, a arch.Backbone, want error, words []string) {
	t.Helper()
	if width == 0 {
		width = 4
	}
	if a == "" {
		a = arch.ResNet18ImageNet
	}
	b, err := models.NewBackboneWidth(a, width, 3, 16, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	before := b.State()
	err = ResNet18(path, b)
	if !errors.Is(err, want) {
		t.Errorf("case %d %s: error %v, want %v", i, filepath.Base(path), err, want)
		return
	}
	t.Logf("case %d: %v", i, err)
	for _, w := range append([]string{filepath.Base(path)}, words...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("case %d %s: error %q does not mention %q", i, filepath.Base(path), err, w)
		}
	}
	for j, ts := range b.State() {
		for k, v := range ts.Data {
			if v != before[j].Data[k] && !(math.IsNaN(float64(v)) && math.IsNaN(float64(before[j].Data[k]))) {
				t.Fatalf("case %d: %s changed by a failed import", i, ts.Name)
			}
		}
	}
}
