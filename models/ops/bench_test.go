package ops

import (
	"testing"
)

// BenchmarkConvNetStep measures one training step (forward, backward, SGD) of the default backbone on a
// batch of 128 Fashion-MNIST images, built from this package's ops and from stock gorgonia ops.
func BenchmarkConvNetStep(b *testing.B) {
	const batch = 128
	images, labels, err := readFashion(batch)
	if err != nil {
		b.Fatal(err)
	}
	for _, variant := range []struct {
		name  string
		stock bool
	}{{"ops", false}, {"stock", true}} {
		b.Run(variant.name, func(b *testing.B) {
			net, err := buildConvNet(batch, variant.stock)
			if err != nil {
				b.Fatal(err)
			}
			tr, err := newTrainer(net, images, labels)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.vm.Close()
			if _, err := tr.step(); err != nil { // warm-up: buffers are allocated in the first run
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := tr.step(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "img/s")
		})
	}
}
