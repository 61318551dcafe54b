package train_test

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/train"
)

// BenchmarkFineTune224 measures Stage I fine-tuning of the ImageNet ResNet-18 at 224x224 (S=64, batch 16,
// rotation off, train.backbone_lr_scale 0.1), images per second of training steps: on task 1 (CE + L_ac) and
// on a later task (bicyc: the old backbone's forward pass, D and A too), with everything trainable and with
// only layer4 and the reduction trainable (model.freeze_stages 4). images/cpu-s divides by the process's CPU
// time instead of the wall time: on a shared machine it shows what the code costs, and twice it bounds what
// 2 dedicated cores can do. Run it alone, under nice:
//
//	CGO_LDFLAGS=-lopenblas nice go test -run '^$' -bench FineTune224 -benchtime 3x ./train/
func BenchmarkFineTune224(b *testing.B) {
	ops.UseOpenBLAS()
	ops.SetThreads(0)
	const batch, side, s, classes = 16, 224, 64, 10
	rng := rand.New(rand.NewPCG(1, 2))
	images := make([]float32, batch*3*side*side)
	for i := range images {
		images[i] = float32(rng.NormFloat64())
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = i % classes
	}
	cfg := config.Default()
	cfg.Train.BackboneLRScale = 0.1
	for _, task := range []int{1, 2} {
		for _, frozen := range []int{0, 4} {
			b.Run(fmt.Sprintf("task%d/frozen%d", task, frozen), func(b *testing.B) {
				backbone, err := models.NewBackbone(arch.ResNet18ImageNet, 3, s, rng)
				if err != nil {
					b.Fatal(err)
				}
				if err := backbone.FreezeStages(frozen); err != nil {
					b.Fatal(err)
				}
				nets := train.Stage1Nets{Backbone: backbone, Head: models.NewLinear(s, classes, true, rng)}
				if task > 1 {
					nets.Old = backbone.Clone()
					if nets.Distiller, err = models.NewMapper(arch.MLP, s, 32, rng); err != nil {
						b.Fatal(err)
					}
					if nets.Adapter, err = models.NewMapper(arch.MLP, s, 32, rng); err != nil {
						b.Fatal(err)
					}
				}
				step, err := train.NewStage1Step(cfg, nets, train.Stage1Input{Batch: batch, Channels: 3, Height: side, Width: side})
				if err != nil {
					b.Fatal(err)
				}
				defer step.Close()
				if _, err := step.Run(images, labels, 0.01); err != nil { // first run allocates buffers
					b.Fatal(err)
				}
				cpu := cpuSeconds(b)
				b.ResetTimer()
				for range b.N {
					if _, err := step.Run(images, labels, 0.01); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "images/s")
				b.ReportMetric(float64(batch*b.N)/(cpuSeconds(b)-cpu), "images/cpu-s")
			})
		}
	}
}

// cpuSeconds returns the user and system CPU time the process has used.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
