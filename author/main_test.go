package author

import (
	"context"
	"image"
	"os"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel"
)

// The tests' models: real exports of a small random convnet over real
// Fashion-MNIST images (internal/testmodel).
const fixturePerClass = testmodel.PerClass

type fixture struct {
	twoTasks, oneTask string
	test              *data.Dataset
	models            *testmodel.Models
}

var (
	fixtureOnce  sync.Once
	fixtureValue *fixture
	fixtureErr   error
	fixtureRoot  string // removed by TestMain
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

// loadFixture returns the shared models, building them on first use. ONNX
// Runtime is a requirement, not a reason to skip: the test command
// installs it.
func loadFixture(t testing.TB) *fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		if _, fixtureErr = infer.InitRuntime(""); fixtureErr != nil {
			return
		}
		if fixtureRoot, fixtureErr = os.MkdirTemp("", "author-test-"); fixtureErr != nil {
			return
		}
		var m *testmodel.Models
		if m, fixtureErr = testmodel.Build(fixtureRoot); fixtureErr == nil {
			fixtureValue = &fixture{twoTasks: m.TwoTasks, oneTask: m.OneTask, test: m.Test, models: m}
		}
	})
	if fixtureErr != nil {
		t.Fatalf("building the test models: %v", fixtureErr)
	}
	return fixtureValue
}

func fashionImage(d *data.Dataset, i int) image.Image { return testmodel.Image(d, i) }

// heldOut returns n test-set indices per class that the prototypes were not
// estimated from.
func heldOut(f *fixture, n int) []int { return testmodel.HeldOut(f.test, n) }

// cpu are the options every test opens models with.
var cpu = []infer.Option{infer.WithProvider(infer.ProviderCPU), infer.WithThreads(1)}

// openCPU opens dir on the CPU; the test closes it.
func openCPU(t testing.TB, dir string, opts ...infer.Option) *infer.Classifier {
	t.Helper()
	c, err := infer.Open(context.Background(), dir, append(cpu, opts...)...)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
