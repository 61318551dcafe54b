package infer

import (
	"context"
	"fmt"
	"image"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkClassifyThreads measures Classify on the test convnet (1x28x28,
// the default Fashion-MNIST model's shape) with several intra-op thread
// settings, from parallel goroutines as a server calls it, and reports the
// p50 and p99 latency of single calls. DefaultThreads is chosen from it.
func BenchmarkClassifyThreads(b *testing.B) {
	f := loadFixture(b)
	img := fashionImage(f.test, 0)
	for _, threads := range []int{1, 2, 0} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			c := openCPU(b, f.twoTasks, WithThreads(threads))
			var mu sync.Mutex
			var lat []time.Duration
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var local []time.Duration
				for pb.Next() {
					start := time.Now()
					if _, err := c.Classify(context.Background(), img); err != nil {
						b.Error(err)
						return
					}
					local = append(local, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			})
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
			}
		})
	}
}

// BenchmarkClassifyBatch measures throughput of 32-image batches.
func BenchmarkClassifyBatch(b *testing.B) {
	f := loadFixture(b)
	c := openCPU(b, f.twoTasks)
	imgs := make([]image.Image, 32)
	for i := range imgs {
		imgs[i] = fashionImage(f.test, i)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.ClassifyBatch(context.Background(), imgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(imgs))/b.Elapsed().Seconds(), "img/s")
}
