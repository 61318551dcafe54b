package infer

import (
	"image"
	"os"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/internal/testmodel"
	"github.com/bicyc/bicyc/safetensors"
)

// The test bundles are real exports of a small random convnet over real
// Fashion-MNIST images (internal/testmodel).
const (
	fixtureFeatureDim = testmodel.FeatureDim
	fixturePerClass   = testmodel.PerClass
	fixtureTopK       = testmodel.TopK
)

// fixture is built once per test binary.
type fixture struct {
	twoTasks string // bundle of 10 classes in two tasks, with adapter.onnx
	oneTask  string // bundle of the first task's 5 classes, no adapter

	test      *data.Dataset        // Fashion-MNIST test set
	reference *gauss.Classifier    // the scores model.onnx must reproduce
	adapter   []safetensors.Tensor // the weights of adapter.onnx
}

var (
	fixtureOnce  sync.Once
	fixtureValue *fixture
	fixtureErr   error
	fixtureRoot  string // removed by TestMain
)

// loadFixture returns the shared fixture, building it on first use.
func loadFixture(t testing.TB) *fixture {
	t.Helper()
	requireRuntime(t)
	fixtureOnce.Do(func() { fixtureValue, fixtureErr = buildFixture() })
	if fixtureErr != nil {
		t.Fatalf("building the test bundles: %v", fixtureErr)
	}
	return fixtureValue
}

// fashionImage returns test image i as a Go image.
func fashionImage(d *data.Dataset, i int) image.Image { return testmodel.Image(d, i) }

func buildFixture() (*fixture, error) {
	root, err := os.MkdirTemp("", "infer-test-")
	if err != nil {
		return nil, err
	}
	fixtureRoot = root
	m, err := testmodel.Build(root)
	if err != nil {
		return nil, err
	}
	return &fixture{twoTasks: m.TwoTasks, oneTask: m.OneTask, test: m.Test, reference: m.Reference, adapter: m.Adapter}, nil
}
