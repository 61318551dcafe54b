package config

import (
	"math"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/data"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestFashionMNISTDir: the default data.dir is where package data looks
// for Fashion-MNIST when given no directory.
func TestFashionMNISTDir(t *testing.T) {
	if FashionMNISTDir != data.FashionMNISTDir {
		t.Errorf("config.FashionMNISTDir %q, data.FashionMNISTDir %q", FashionMNISTDir, data.FashionMNISTDir)
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

func TestValidateBackboneKeys(t *testing.T) {
	photo := Default()
	photo.Model.Backbone, photo.Data.Channels = "resnet18-imagenet", 3
	photo.Data.Mean, photo.Data.Std = []float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}
	photo.Model.Pretrained, photo.Model.FreezeStages, photo.Train.BackboneLRScale = "resnet18.onnx", 4, 0.1
	if err := photo.Validate(); err != nil {
		t.Fatalf("pretrained resnet18-imagenet: %v", err)
	}
	for i, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Model.Backbone = "resnet18" }, "model.pretrained: needs model.backbone resnet18-imagenet"},
		{func(c *Config) { c.Data.Channels = 1 }, "model.pretrained: a torchvision ResNet-18 takes RGB images"},
		{func(c *Config) { c.Model.FreezeStages = 6 }, "model.freeze_stages: must lie in [0,5]"},
		{func(c *Config) { c.Model.Backbone, c.Model.Pretrained, c.Model.FreezeStages = "convnet", "", 4 }, "model.freeze_stages: must lie in [0,3]"},
		{func(c *Config) { c.Model.Backbone, c.Model.Pretrained, c.Model.Width = "convnet", "", 16 }, "model.width: the convnet has a fixed width"},
		{func(c *Config) { c.Model.Width = -1 }, "model.width: must be >= 0"},
		{func(c *Config) { c.Train.BackboneLRScale = 0 }, "train.backbone_lr_scale: must be positive"},
		{func(c *Config) { c.Model.Backbone = "resnet50" }, "model.backbone: \"resnet50\" is not one of"},
	} {
		cfg := photo
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want %q", i, err, c.want)
		}
	}
}

// TestValidateNumbers: every number key is finite and in range, each
// error naming the key as written (issue 33, row 6).
func TestValidateNumbers(t *testing.T) {
	photo := func(c *Config) { c.Data.Channels, c.Data.Height, c.Data.Width = 3, 224, 224 }
	for i, tc := range []struct {
		set  func(c *Config)
		want string
	}{
		{func(c *Config) { c.Train.LRFirst = math.Inf(1) }, "train.lr_first: must be a finite number"},
		{func(c *Config) { c.Train.LRFirst = 1e300 }, "train.lr_first: a learning rate must lie in (0, 10]"},
		{func(c *Config) { c.Adapter.LR = -1 }, "adapter.lr: a learning rate"},
		{func(c *Config) { c.Train.Momentum = 1 }, "train.momentum: must lie in [0, 1)"},
		{func(c *Config) { c.Train.ClipNorm = math.NaN() }, "train.clip_norm: must be a finite number"},
		{func(c *Config) { c.Train.Milestones = []float64{0.5, math.NaN()} }, "train.milestones: value 1 must be a finite number"},
		{func(c *Config) { c.Loss.LambdaCyc = -1 }, "loss.lambda_cyc: must be >= 0"},
		{func(c *Config) { c.Data.TestPerClass = -1 }, "data.test_per_class: must be >= 0"},
		{func(c *Config) { photo(c); c.Train.Rotation = false; c.Train.BatchSize = 8000 }, "train.batch_size: 8000 images of 3x224x224 take 4.5 GiB"},
		{func(c *Config) { photo(c); c.Train.Rotation = false; c.Train.EvalBatch = 10000 }, "train.eval_batch: 10000 images of 3x224x224 take 5.6 GiB"},
		{func(c *Config) { c.QuickSet.Epochs = 0 }, "quick_profile.epochs: must be >= 1"},
		{func(c *Config) { c.RunName = "../x" }, `run_name: run name "../x": invalid name`},
	} {
		c := Default()
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: %v, want %q", i, err, tc.want)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestValidateClassifierNonFinite: NaN and ±Inf classifier options and
// accept rate are refused through the configuration, each named once by
// its key (gauss.ClassifierOptions.Problems and gauss.ValidateAcceptRate,
// the one check config, bundle and infer share).
func TestValidateClassifierNonFinite(t *testing.T) {
	for i, c := range []struct {
		edit func(*Config)
		key  string
	}{
		{func(c *Config) { c.Classifier.Shrink = math.NaN() }, "classifier.shrink"},
		{func(c *Config) { c.Classifier.Shrink = math.Inf(1) }, "classifier.shrink"},
		{func(c *Config) { c.Classifier.OffDiagShrink = math.Inf(1) }, "classifier.off_diag_shrink"},
		{func(c *Config) { c.Classifier.AgeBias = math.Inf(-1) }, "classifier.age_bias"},
		{func(c *Config) { c.Classifier.PoolCov = math.NaN() }, "classifier.pool_cov"},
		{func(c *Config) { c.Classifier.TopK = -1 }, "classifier.top_k"},
		{func(c *Config) { c.Export.AcceptRate = math.NaN() }, "export.accept_rate"},
		{func(c *Config) { c.Export.AcceptRate = math.Inf(1) }, "export.accept_rate"},
		{func(c *Config) { c.Export.AcceptRate = 0 }, "export.accept_rate"},
	} {
		cfg := Default()
		c.edit(&cfg)
		err := cfg.Validate()
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		if n := strings.Count(err.Error(), c.key+":"); n != 1 {
			t.Errorf("case %d: %s named %d times in:\n%v", i, c.key, n, err)
		}
	}
}

// TestClassifierKeysHideAges: the classes' ages are not a configuration
// key, though they travel in gauss.ClassifierOptions.
func TestClassifierKeysHideAges(t *testing.T) {
	for _, k := range Keys() {
		if strings.HasPrefix(k.Name, "classifier.") && strings.Contains(k.Name, "-") || k.Name == "classifier.ages" {
			t.Errorf("key %s", k.Name)
		}
	}
}

func TestValidateContrastive(t *testing.T) {
	c := Default()
	c.Train.ContrastiveWeight = 0.5
	if err := c.Validate(); err != nil {
		t.Errorf("contrastive weight 0.5 on the default: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"negative weight", func(c *Config) { c.Train.ContrastiveWeight = -1 }, "train.contrastive_weight: must be >= 0"},
		{"without rotation", func(c *Config) { c.Train.Rotation = false }, "train.contrastive_weight: needs train.rotation"},
		{"unsplit batch", func(c *Config) { c.Train.RotationSplitBatch = false }, "train.contrastive_weight: needs train.rotation"},
		{"zero temperature", func(c *Config) { c.Train.ContrastiveTemperature = 0 }, "train.contrastive_temperature: must lie in (0, 10]"},
	} {
		bad := c
		tc.edit(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	off := Default()
	off.Train.Rotation = false
	if err := off.Validate(); err != nil {
		t.Errorf("weight 0 needs no rotation: %v", err)
	}
}
