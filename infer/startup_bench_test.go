package infer

import (
	"context"
	"testing"
)

// BenchmarkOpen measures Open, the part of a `bicyc-infer one.png` process
// after loading the ONNX Runtime library: manifest and checksum
// verification, one session per model file and their warm-up runs. The
// two-task bundle has three sessions (model, backbone, adapter), the
// one-task bundle two; Classify uses only model.onnx's. "auto" adds the
// probing of the TensorRT and CUDA providers that bicyc-infer's default
// provider does.
func BenchmarkOpen(b *testing.B) {
	f := loadFixture(b)
	for _, c := range []struct {
		name, dir string
		provider  Provider
	}{
		{"two-tasks/cpu", f.twoTasks, ProviderCPU},
		{"one-task/cpu", f.oneTask, ProviderCPU},
		{"two-tasks/auto", f.twoTasks, ProviderAuto},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cl, err := Open(context.Background(), c.dir, WithProvider(c.provider), WithLog(nil))
				if err != nil {
					b.Fatal(err)
				}
				cl.Close()
			}
		})
	}
}

// BenchmarkClassifyOne measures one Classify call on one goroutine and
// reports its heap allocations: preprocessing, the input and output
// tensors ONNX Runtime wraps, and the ranking.
func BenchmarkClassifyOne(b *testing.B) {
	f := loadFixture(b)
	c := openCPU(b, f.twoTasks)
	img := fashionImage(f.test, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Classify(context.Background(), img); err != nil {
			b.Fatal(err)
		}
	}
}
