package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestFidelityValidation checks that every bad value of a fidelity switch
// is an error naming its key.
func TestFidelityValidation(t *testing.T) {
	c := Default()
	c.Train.MilestoneRounding = "floor"
	c.Loss.PairSampling = "last"
	c.Adapter.AdaGaussEpochs = "half"
	c.Adapter.Milestones = []float64{0.5, 1}
	c.Model.LinearBias = true // with the mlp mapper
	err := c.Validate()
	for _, key := range []string{"train.milestone_rounding", "loss.pair_sampling", "adapter.adagauss_epochs", "adapter.milestones", "model.linear_bias"} {
		if err == nil || !strings.Contains(err.Error(), key+":") {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
	c = Default()
	c.Model.Mapper, c.Model.LinearBias = "linear", true
	c.Train.MilestoneRounding, c.Loss.PairSampling, c.Adapter.AdaGaussEpochs = MilestoneTruncate, PairSamplingFirst, AdaGaussEpochsAdapter
	c.Adapter.Milestones = []float64{0.3, 0.6, 0.9}
	if err := c.Validate(); err != nil {
		t.Errorf("the authors' code's settings: %v", err)
	}
}

// TestReadRunBeforeFidelitySwitches checks that a run's config.yaml written
// before the switches existed reads them at the behaviour it was trained
// with: L_pair's first rows, rounded milestones, no bias, a constant
// Stage II rate and adagauss's adapter at train.epochs.
func TestReadRunBeforeFidelitySwitches(t *testing.T) {
	c := readRunWithout(t, "model.linear_bias", "train.milestone_rounding", "loss.pair_sampling", "adapter.adagauss_epochs", "adapter.milestones")
	if c.Loss.PairSampling != PairSamplingFirst || c.Train.MilestoneRounding != MilestoneRound || c.Model.LinearBias ||
		len(c.Adapter.Milestones) != 0 || c.Adapter.AdaGaussEpochs != AdaGaussEpochsTrain {
		t.Errorf("old run read as pair_sampling %q, milestone_rounding %q, linear_bias %v, adapter.milestones %v, adagauss_epochs %q",
			c.Loss.PairSampling, c.Train.MilestoneRounding, c.Model.LinearBias, c.Adapter.Milestones, c.Adapter.AdaGaussEpochs)
	}
}

// readRunWithout writes the default configuration without the dotted keys
// (section.key), as a run written before they existed, and reads it back
// with ReadRun.
func readRunWithout(t *testing.T, keys ...string) Config {
	t.Helper()
	full, err := yaml.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(full, &tree); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		section, name, _ := strings.Cut(key, ".")
		m := tree[section].(map[string]any)
		if _, ok := m[name]; !ok {
			t.Fatalf("config.yaml has no %s", key)
		}
		delete(m, name)
	}
	old, err := yaml.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ReadRun(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
