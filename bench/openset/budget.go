package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/train"
)

// budget is what one seed's run trained and was tested on: images per
// known class as counted in the folders it read, and the training settings
// from the run's own config.yaml. A report states these, never a setting's
// zero value (data.train_per_class 0 means every image).
type budget struct {
	TrainImages      int  `json:"train_images_per_class"`
	HeldOut          int  `json:"held_out_per_class"`
	ValPerClass      int  `json:"val_per_class"`
	TestImages       int  `json:"test_images_per_class"`
	EpochsFirst      int  `json:"epochs_first"`
	Epochs           int  `json:"epochs"`
	Rotation         bool `json:"rotation"`
	MinStepsFirst    int  `json:"min_steps_first"`
	BatchSize        int  `json:"batch_size"`
	AdapterEpochs    int  `json:"adapter_epochs"`
	TransportSamples int  `json:"transport_samples"`
	AdapterMinSteps  int  `json:"adapter_min_steps"`
}

// runBudget reads the budget of the run in runDir, trained on the class
// folders under trainDir and tested on those under testDir: the smallest
// class counts (Fashion-MNIST's classes are equal).
func runBudget(runDir, trainDir, testDir string) (budget, error) {
	cfg, err := config.ReadRun(filepath.Join(runDir, "config.yaml"))
	if err != nil {
		return budget{}, err
	}
	nTrain, err := fewestImages(trainDir)
	if err != nil {
		return budget{}, err
	}
	nTest, err := fewestImages(testDir)
	if err != nil {
		return budget{}, err
	}
	b := configBudget(cfg)
	b.TrainImages, b.TestImages = nTrain, nTest
	b.HeldOut = train.ValidationCount(cfg.Data.ValPerClass, nTrain)
	return b, nil
}

// configBudget is the budget a resolved configuration asks for; its image
// counts are the per-class limits, 0 for all.
func configBudget(cfg config.Config) budget {
	return budget{
		TrainImages: cfg.Data.TrainPerClass, HeldOut: train.ValidationCount(cfg.Data.ValPerClass, cfg.Data.TrainPerClass),
		ValPerClass: cfg.Data.ValPerClass, TestImages: cfg.Data.TestPerClass, EpochsFirst: cfg.Train.EpochsFirst, Epochs: cfg.Train.Epochs,
		Rotation: cfg.Train.Rotation, MinStepsFirst: cfg.Train.MinStepsFirst, BatchSize: cfg.Train.BatchSize,
		AdapterEpochs: cfg.AdapterEpochs(), TransportSamples: cfg.Adapter.TransportSamples,
		AdapterMinSteps: cfg.Adapter.MinSteps,
	}
}

// fewestImages is the smallest number of files in a class folder of root.
func fewestImages(root string) (int, error) {
	classes, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	fewest := -1
	for _, c := range classes {
		if !c.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(root, c.Name()))
		if err != nil {
			return 0, err
		}
		n := 0
		for _, f := range files {
			if f.Type().IsRegular() && !strings.HasPrefix(f.Name(), ".") {
				n++
			}
		}
		if fewest < 0 || n < fewest {
			fewest = n
		}
	}
	if fewest < 0 {
		return 0, fmt.Errorf("%s: no class folders", root)
	}
	return fewest, nil
}

// text is the budget as the report's lines state it; an image count of 0
// (a configuration's "no limit", from a results.json written before runs
// recorded their budget) reads "all".
func (b budget) text() string {
	images := func(n int, what string) string {
		if n == 0 {
			return "all " + what
		}
		return fmt.Sprintf("%d %s", n, what)
	}
	held := fmt.Sprint(b.HeldOut)
	if b.TrainImages == 0 {
		switch {
		case b.ValPerClass < 0:
			held = "10 %"
		case b.ValPerClass > 0:
			held = fmt.Sprintf("%d (at most half)", b.ValPerClass)
		}
	}
	return fmt.Sprintf("Per class: %s of which %s held out (validation split, calibration),\n"+
		"  %s (known and unknown classes alike). Stage I: %d epochs on task 1 (rotation %v, at least %d steps),\n"+
		"  %d on later tasks, batch %d; Stage II: %d epochs, %d transport samples per old class, at least %d steps.",
		images(b.TrainImages, "training images"), held, images(b.TestImages, "test images"),
		b.EpochsFirst, b.Rotation, b.MinStepsFirst, b.Epochs, b.BatchSize, b.AdapterEpochs, b.TransportSamples, b.AdapterMinSteps)
}
