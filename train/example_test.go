package train_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/train"
)

// Train the quick profile of the default Fashion-MNIST stream, then export
// the model directory that bicyc-infer and package infer read.
func Example() {
	cfg := config.Default()
	cfg.Quick = true
	cfg = cfg.Resolved()
	run, err := train.New(cfg, "runs/quick", train.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer run.Close()
	if err := run.Execute(context.Background()); err != nil {
		log.Fatal(err) // the last checkpoint stays valid: train.Resume("runs/quick", ...) continues
	}
	s, err := run.Summary()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("A_last %.1f%%, A_inc %.1f%%, F_last %.1f%%\n", 100*s.TAg.ALast, 100*s.TAg.AInc, 100*s.TAg.FLast)
	if err := train.Export(run.Dir(), "runs/quick/model", 0); err != nil {
		log.Fatal(err)
	}
}

// A learning-rate schedule of 10 epochs with docs/method.md's milestones.
func ExampleLearningRate() {
	for epoch := 0; epoch < 10; epoch += 3 {
		fmt.Printf("epoch %d: %.4g\n", epoch, train.LearningRate(0.1, 0.1, []float64{0.3, 0.6, 0.9}, epoch, 10))
	}
	// Output:
	// epoch 0: 0.1
	// epoch 3: 0.01
	// epoch 6: 0.001
	// epoch 9: 0.0001
}
