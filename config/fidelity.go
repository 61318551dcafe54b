package config

import (
	"slices"

	"github.com/bicyc/bicyc/arch"
)

// Values of the fidelity switches: keys that choose between this project's
// behaviour and the authors' code where docs/method.md leaves it open or
// differs (docs/method.md, "Fidelity switches").
const (
	// MilestoneRound places a milestone fraction m of E epochs at round(m*E)
	// and ignores one at epoch 0 (train.milestone_rounding).
	MilestoneRound = "round"
	// MilestoneTruncate places it at int(m*E), and one at epoch 0 decays from
	// the first epoch on, as PyTorch's MultiStepLR in the authors' code.
	MilestoneTruncate = "truncate"

	// PairSamplingRandom draws L_pair's rows at random for each of its two
	// terms (loss.pair_sampling; docs/method.md).
	PairSamplingRandom = "random"
	// PairSamplingFirst takes the first loss.pair_rows rows of the batch.
	PairSamplingFirst = "first"

	// AdaGaussEpochsTrain trains adagauss's post-task adapter for
	// train.epochs (adapter.adagauss_epochs).
	AdaGaussEpochsTrain = "train"
	// AdaGaussEpochsAdapter trains it for adapter.epochs, by default half
	// of train.epochs, as the authors' code does.
	AdaGaussEpochsAdapter = "adapter"
)

// PostTaskAdapterEpochs is the number of epochs of adagauss's post-task
// adapter before any step floor: train.epochs, or AdapterEpochs when
// adapter.adagauss_epochs is "adapter".
func (c Config) PostTaskAdapterEpochs() int {
	if c.Adapter.AdaGaussEpochs == AdaGaussEpochsAdapter {
		return c.AdapterEpochs()
	}
	return c.Train.Epochs
}

// validateFidelity checks the fidelity switches.
func (c Config) validateFidelity(bad problem) {
	oneOf := func(key, v string, allowed ...string) {
		if !slices.Contains(allowed, v) {
			bad(key, "%q is not one of %q", v, allowed)
		}
	}
	oneOf("train.milestone_rounding", c.Train.MilestoneRounding, MilestoneRound, MilestoneTruncate)
	oneOf("loss.pair_sampling", c.Loss.PairSampling, PairSamplingRandom, PairSamplingFirst)
	oneOf("adapter.adagauss_epochs", c.Adapter.AdaGaussEpochs, AdaGaussEpochsTrain, AdaGaussEpochsAdapter)
	for _, m := range c.Adapter.Milestones {
		if m <= 0 || m >= 1 {
			bad("adapter.milestones", "fractions must lie in (0,1), got %g", m)
		}
	}
	if c.Model.LinearBias && c.Model.Mapper != arch.Linear {
		bad("model.linear_bias", "applies to model.mapper linear only (the other mappers have biases), got mapper %s", c.Model.Mapper)
	}
}
