package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/gauss"
)

// addedKeys are the keys added after run directories were first written,
// each with the value that reproduces a run whose config.yaml predates it
// (for train.rotation_split_batch that is not the default).
var addedKeys = map[string]func(*Config){
	"adapter.alpha":           func(c *Config) { c.Adapter.Alpha = -1 },
	"adapter.min_steps":       func(c *Config) { c.Adapter.MinSteps = 0 },
	"adapter.select":          func(c *Config) { c.Adapter.Select = false },
	"data.val_per_class":      func(c *Config) { c.Data.ValPerClass = 0 },
	"data.skip_unreadable":    func(c *Config) { c.Data.SkipUnreadable = false },
	"export.accept_rate":      func(c *Config) { c.Export.AcceptRate = 0.95 },
	"quick_profile.min_steps": func(c *Config) { c.QuickSet.MinSteps = 0 },
	"train.min_steps":         func(c *Config) { c.Train.MinSteps = 0 },
	"train.freeze_bn_stats":   func(c *Config) { c.Train.FreezeBNStats = false },
	// Written while train.min_steps applied to task 1 too.
	"train.min_steps_first":      func(c *Config) { c.Train.MinStepsFirst = c.Train.MinSteps },
	"data.trivial_augment":       func(c *Config) { c.Data.TrivialAugment = false },
	"train.rotation_split_batch": func(c *Config) { c.Train.RotationSplitBatch = false },
	// Photo preprocessing: runs before it squashed and cropped with padding.
	"data.resize_mode":         func(c *Config) { c.Data.ResizeMode = arch.Squash },
	"data.center_crop_ratio":   func(c *Config) { c.Data.CenterCropRatio = 0.875 },
	"data.load_size":           func(c *Config) { c.Data.LoadSize = 0 },
	"data.random_resized_crop": func(c *Config) { c.Data.RandomResizedCrop = false },
	"data.resized_crop_scale":  func(c *Config) { c.Data.ResizedCropScale = []float64{0.08, 1} },
	"data.resized_crop_ratio":  func(c *Config) { c.Data.ResizedCropRatio = []float64{3.0 / 4, 4.0 / 3} },
	"model.width":              func(c *Config) { c.Model.Width = 0 },
	"model.pretrained":         func(c *Config) { c.Model.Pretrained = "" },
	"model.freeze_stages":      func(c *Config) { c.Model.FreezeStages = 0 },
	"train.backbone_lr_scale":  func(c *Config) { c.Train.BackboneLRScale = 1 },
	// Fidelity switches: runs before them behaved as these values.
	"model.linear_bias":        func(c *Config) { c.Model.LinearBias = false },
	"train.milestone_rounding": func(c *Config) { c.Train.MilestoneRounding = MilestoneRound },
	"loss.pair_sampling":       func(c *Config) { c.Loss.PairSampling = PairSamplingFirst },
	"adapter.adagauss_epochs":  func(c *Config) { c.Adapter.AdaGaussEpochs = AdaGaussEpochsTrain },
	"adapter.milestones":       func(c *Config) { c.Adapter.Milestones = nil },
	// Classifier calibration, off before it existed.
	"classifier.off_diag_shrink": func(c *Config) { c.Classifier.OffDiagShrink = 0 },
	"classifier.age_shrink":      func(c *Config) { c.Classifier.AgeShrink = 0 },
	"classifier.age_bias":        func(c *Config) { c.Classifier.AgeBias = 0 },
	"classifier.pool_cov":        func(c *Config) { c.Classifier.PoolCov = 0 },
	"classifier.test_flip":       func(c *Config) { c.Classifier.TestFlip = false },
	// Unknown score: runs before the choice answered by mahalanobis.
	"classifier.unknown_score": func(c *Config) { c.Classifier.UnknownScore = gauss.ScoreMahalanobis },
	// Shortlist: every class scored exactly, as every model before it.
	"classifier.shortlist": func(c *Config) { c.Classifier.Shortlist = 0 },
	// Classifier head: the Gaussian one, as every run before the choice.
	"classifier.head": func(c *Config) { c.Classifier.Head = "" },
	// Gaussian weight: the softmax head alone, as every run before it.
	"classifier.gaussian_weight": func(c *Config) { c.Classifier.GaussianWeight = 0 },
	// Drift anchors: off, as every run before them.
	"anchors.per_class":  func(c *Config) { c.Anchors.PerClass = 0 },
	"anchors.steps":      func(c *Config) { c.Anchors.Steps = Default().Anchors.Steps },
	"anchors.step":       func(c *Config) { c.Anchors.Step = Default().Anchors.Step },
	"anchors.start":      func(c *Config) { c.Anchors.Start = Default().Anchors.Start },
	"anchors.mean_shift": func(c *Config) { c.Anchors.MeanShift = false },
	// Prototype rehearsal: off, as every run before it.
	"loss.rehearsal.enabled":   func(c *Config) { c.Loss.Rehearsal = DefaultRehearsal() },
	"loss.rehearsal.lambda":    func(c *Config) { c.Loss.Rehearsal.Lambda = DefaultRehearsal().Lambda },
	"loss.rehearsal.per_class": func(c *Config) { c.Loss.Rehearsal.PerClass = DefaultRehearsal().PerClass },
	"loss.rehearsal.backbone":  func(c *Config) { c.Loss.Rehearsal.Backbone = DefaultRehearsal().Backbone },
	// Outlier exposure: off, as every run before it.
	"loss.outlier_exposure": func(c *Config) { c.Loss.OutlierExposure = 0 },
	// Contrastive task 1: off, as every run before it.
	"train.contrastive_weight":      func(c *Config) { c.Train.ContrastiveWeight = 0 },
	"train.contrastive_temperature": func(c *Config) { c.Train.ContrastiveTemperature = Default().Train.ContrastiveTemperature },
	// Adapter ensemble: A alone, as every run before it.
	"adapter.ensemble": func(c *Config) { c.Adapter.Ensemble = 1 },
	// Before train.device every run trained on the CPU; auto still does.
	"train.device": func(c *Config) { c.Train.Device = DeviceAuto },
}

// MaxFileBytes is the largest configuration file bicyc reads, 1 MiB: the
// shipped configs take about 1 KiB, a class_order of 100000 classes about
// 700 KiB. A larger file is refused before it is parsed, so a hostile or
// mistaken file cannot take gigabytes of memory in the YAML parser.
const MaxFileBytes = 1 << 20

// ReadFile reads a configuration file of at most MaxFileBytes (a regular
// file; a named pipe or device is refused at once). Errors name the file
// and wrap bounded.ErrTooLarge for a larger one.
func ReadFile(path string) ([]byte, error) {
	b, err := bounded.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return b, nil
}

// ReadRun reads a run directory's config.yaml, which holds every key the
// run was trained with. It is strict: an unknown key, or a missing key that
// existed when the file was written (a truncated or foreign file), is an
// error naming the file and the key. A key added since takes the value that
// reproduces the run as it was trained, so resuming, forking or exporting
// an older run keeps its behaviour.
func ReadRun(path string) (Config, error) {
	b, err := ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty file")
		}
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(b, &tree); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, k := range Keys() {
		if hasKey(tree, k.Name) {
			continue
		}
		set, ok := addedKeys[k.Name]
		if !ok {
			return Config{}, fmt.Errorf("%s: no key %s: truncated, or not a run's config.yaml", path, k.Name)
		}
		set(&c)
	}
	return c, nil
}

// hasKey reports whether the dotted key is present in a decoded YAML tree.
func hasKey(tree map[string]any, key string) bool {
	var node any = tree
	for _, part := range strings.Split(key, ".") {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
