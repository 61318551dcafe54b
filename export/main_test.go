package export

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// requireRuntime fails the test unless TestMain (runtime_test.go) started
// ONNX Runtime.
func requireRuntime(t testing.TB) {
	t.Helper()
	if !ort.IsInitialized() {
		t.Fatal("ONNX Runtime is not initialised: see TestMain's message")
	}
}

// runModel runs an ONNX model on CPU with one thread. inputs are float32
// tensors keyed by name with their shapes; outputs are returned as float32
// or int64 slices in the order of outputNames.
func runModel(t *testing.T, model []byte, inputNames []string, inputs [][]float32, shapes [][]int64, outputNames []string) []any {
	t.Helper()
	return runModelIn(t, "", model, inputNames, inputs, shapes, outputNames)
}

// runModelIn is runModel for a model whose external data is in dir.
func runModelIn(t *testing.T, dir string, model []byte, inputNames []string, inputs [][]float32, shapes [][]int64, outputNames []string) []any {
	t.Helper()
	requireRuntime(t)
	opts, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		t.Fatal(err)
	}
	if dir != "" {
		if err := opts.AddSessionConfigEntry("session.model_external_initializers_file_folder_path", dir); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := ort.NewDynamicAdvancedSessionWithONNXData(model, inputNames, outputNames, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Destroy()
	in := make([]ort.Value, len(inputs))
	for i := range inputs {
		tensor, err := ort.NewTensor(ort.NewShape(shapes[i]...), inputs[i])
		if err != nil {
			t.Fatal(err)
		}
		defer tensor.Destroy()
		in[i] = tensor
	}
	out := make([]ort.Value, len(outputNames))
	if err := sess.Run(in, out); err != nil {
		t.Fatal(err)
	}
	res := make([]any, len(out))
	for i, v := range out {
		defer v.Destroy()
		switch tv := v.(type) {
		case *ort.Tensor[float32]:
			res[i] = append([]float32(nil), tv.GetData()...)
		case *ort.Tensor[int64]:
			res[i] = append([]int64(nil), tv.GetData()...)
		default:
			t.Fatalf("output %s has unexpected type %T", outputNames[i], v)
		}
	}
	return res
}

// checkerScript loads every model named on the command line and runs the
// full ONNX checker (with strict shape inference) on it.
const checkerScript = `
import sys
import onnx
for path in sys.argv[1:]:
    # onnx.load reads external data (classifier.data) from beside the file.
    onnx.checker.check_model(onnx.load(path), full_check=True)
    print("ok", path)
`

// checkONNX runs Debian's onnx checker on the .onnx files of models, the
// other files (external data) written beside them; python3-onnx missing is a
// failure, not a skip, so a CI without it cannot pass silently.
func checkONNX(t *testing.T, models map[string][]byte) {
	t.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import onnx").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import onnx (apt-get install python3-onnx): %v\n%s", python, err, out)
	}
	dir := t.TempDir()
	args := []string{"-c", checkerScript}
	for name, b := range models {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".onnx") {
			args = append(args, p)
		}
	}
	out, err := exec.Command(python, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("onnx checker rejected a model: %v\n%s", err, out)
	}
}

// loadFashion reads Fashion-MNIST once for all the package's tests.
var loadFashion = sync.OnceValues(func() (*data.Dataset, error) {
	_, test, err := data.LoadFashionMNIST("")
	return test, err
})

// fashionTest returns the Fashion-MNIST test set.
func fashionTest(t *testing.T) *data.Dataset {
	t.Helper()
	test, err := loadFashion()
	if err != nil {
		t.Fatalf("%v (apt-get install dataset-fashion-mnist)", err)
	}
	return test
}

// fashionImages returns the first n Fashion-MNIST test images as
// [n,1,28,28] float32, normalised with the dataset's mean 0.2860 and std
// 0.3530 (statistics of the training set's pixels in [0,1]).
func fashionImages(t *testing.T, n int) []float32 {
	t.Helper()
	pix := fashionTest(t).Pixels[:n*28*28]
	out := make([]float32, len(pix))
	for i, p := range pix {
		out[i] = (float32(p)/255 - 0.2860) / 0.3530
	}
	return out
}

// randomTensor draws N(0, std^2) values, or U(lo, lo+1) when positive is
// set (BN scale and variance).
func randomTensor(rng *rand.Rand, name string, shape []int, std float64, positive bool) safetensors.Tensor {
	data := make([]float32, onnxgraph.NumElements(shape))
	for i := range data {
		if positive {
			data[i] = float32(0.5 + rng.Float64())
		} else {
			data[i] = float32(rng.NormFloat64() * std)
		}
	}
	return safetensors.Tensor{Name: name, Shape: shape, Data: data}
}

// randomConvBN adds a conv weight with He-style scale and BN parameters
// with non-trivial statistics (mean != 0, var != 1, gamma != 1, beta != 0).
func randomConvBN(rng *rand.Rand, conv, bn string, out, in, k int) []safetensors.Tensor {
	std := 1.0 / float64(in*k*k)
	return []safetensors.Tensor{
		randomTensor(rng, conv+".weight", []int{out, in, k, k}, 2*std, false),
		randomTensor(rng, bn+".weight", []int{out}, 0, true),
		randomTensor(rng, bn+".bias", []int{out}, 0.2, false),
		randomTensor(rng, bn+".running_mean", []int{out}, 0.1, false),
		randomTensor(rng, bn+".running_var", []int{out}, 0, true),
	}
}

func randomConvNet(rng *rand.Rand, in, s int) []safetensors.Tensor {
	var ts []safetensors.Tensor
	ts = append(ts, randomConvBN(rng, "conv1", "bn1", 32, in, 3)...)
	ts = append(ts, randomConvBN(rng, "conv2", "bn2", 64, 32, 3)...)
	ts = append(ts, randomConvBN(rng, "conv3", "bn3", 128, 64, 3)...)
	ts = append(ts, randomTensor(rng, "reduce.weight", []int{s, 128, 1, 1}, 0.1, false),
		randomTensor(rng, "reduce.bias", []int{s}, 0.1, false),
		// A task head, which the exporter must ignore.
		randomTensor(rng, "head.0.weight", []int{2, s}, 0.1, false))
	return ts
}

func randomResNet18(rng *rand.Rand, in, s int) []safetensors.Tensor {
	ts := randomConvBN(rng, "conv1", "bn1", 64, in, 3)
	prev := 64
	for stage, out := range []int{64, 128, 256, 512} {
		for block := range 2 {
			p := fmt.Sprintf("layer%d.%d.", stage+1, block)
			ts = append(ts, randomConvBN(rng, p+"conv1", p+"bn1", out, prev, 3)...)
			ts = append(ts, randomConvBN(rng, p+"conv2", p+"bn2", out, out, 3)...)
			if stage > 0 && block == 0 {
				ts = append(ts, randomConvBN(rng, p+"downsample.0", p+"downsample.1", out, prev, 1)...)
			}
			prev = out
		}
	}
	return append(ts, randomTensor(rng, "reduce.weight", []int{s, 512, 1, 1}, 0.05, false),
		randomTensor(rng, "reduce.bias", []int{s}, 0.1, false))
}

// randomTables builds classifier tables with a random whitening matrix per
// class, as gauss would from a Cholesky factor.
func randomTables(rng *rand.Rand, k, s int, normalize bool) gauss.ClassifierTables {
	t := gauss.ClassifierTables{K: k, S: s, Normalize: normalize,
		Means: make([]float32, k*s), Whiten: make([]float32, k*s*s), Bias: make([]float32, k)}
	for i := range t.Means {
		t.Means[i] = float32(rng.NormFloat64() * 0.3)
	}
	for i := range t.Whiten {
		t.Whiten[i] = float32(rng.NormFloat64())
	}
	for i := range t.Bias {
		t.Bias[i] = float32(rng.NormFloat64())
	}
	return t
}

func maxAbsDiff(t *testing.T, got []float32, want []float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	var m float64
	for i := range got {
		d := float64(got[i]) - want[i]
		if d < 0 {
			d = -d
		}
		if d > m || d != d {
			m = d
		}
	}
	return m
}

func TestRuntimeAvailable(t *testing.T) {
	requireRuntime(t)
	t.Logf("onnxruntime %s", ort.GetVersion())
}
