package config

import (
	"strings"
	"testing"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	c := Default()
	c.Method = "sgd"
	c.Train.BatchSize = 1
	c.Data.Std = []float64{0}
	c.Model.Mapper = "attention"
	c.Train.Milestones = []float64{1.5}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, key := range []string{"method", "train.batch_size", "data.std", "model.mapper", "train.milestones"} {
		if !strings.Contains(err.Error(), key+":") {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
}

func TestResolvedQuick(t *testing.T) {
	c := Default()
	if got := c.Resolved(); got.Train.Epochs != c.Train.Epochs {
		t.Error("Resolved changed a config without quick")
	}
	c.Quick = true
	q := c.Resolved()
	if q.Data.TrainPerClass != c.QuickSet.TrainPerClass || q.Train.EpochsFirst != c.QuickSet.EpochsFirst ||
		q.Adapter.Epochs != c.QuickSet.AdapterEpochs || q.Adapter.TransportSamples != c.QuickSet.TransportSamples {
		t.Errorf("quick profile not applied: %+v", q)
	}
}

func TestAdapterEpochs(t *testing.T) {
	c := Default()
	for i, tc := range []struct{ adapter, train, want int }{{-1, 10, 5}, {-1, 1, 1}, {-1, 3, 1}, {0, 10, 0}, {7, 10, 7}} {
		c.Adapter.Epochs, c.Train.Epochs = tc.adapter, tc.train
		if got := c.AdapterEpochs(); got != tc.want {
			t.Errorf("case %d: adapter %d train %d: got %d, want %d", i, tc.adapter, tc.train, got, tc.want)
		}
	}
}

func TestKeysCoverEveryLeaf(t *testing.T) {
	keys := Keys()
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.Name] {
			t.Errorf("duplicate key %s", k.Name)
		}
		seen[k.Name] = true
	}
	for _, want := range []string{"seed", "train.epochs", "loss.lambda_cyc", "classifier.shrink", "quick_profile.adapter_epochs"} {
		if !seen[want] {
			t.Errorf("key %s missing", want)
		}
	}
}

func TestValidateRotationSplitBatch(t *testing.T) {
	c := Default()
	c.Train.BatchSize = 6
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "train.batch_size: must be >= 8") {
		t.Errorf("batch 6 with the split rotated batch: %v", err)
	}
	c.Train.RotationSplitBatch = false
	if err := c.Validate(); err != nil {
		t.Errorf("batch 6 without the split: %v", err)
	}
}
