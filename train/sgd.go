package train

import (
	"fmt"
	"math"

	"github.com/bicyc/bicyc/config"
)

// LearningRate is the step schedule of docs/method.md with rounded
// milestones (train.milestone_rounding round): StepLearningRate with
// config.MilestoneRound.
//
//	lr(epoch) = base * decay^#{m in milestones : epoch >= round(m*epochs) > 0}
func LearningRate(base, decay float64, milestones []float64, epoch, epochs int) float64 {
	return StepLearningRate(base, decay, milestones, config.MilestoneRound, epoch, epochs)
}

// StepLearningRate is base times decay for every milestone fraction of the
// epochs that epoch has reached, the milestone placed as rounding
// (train.milestone_rounding) says:
//
//	round:     epoch >= round(m*epochs), a milestone at epoch 0 ignored
//	truncate:  epoch >= int(m*epochs), a milestone at epoch 0 counting from
//	           the start (PyTorch's MultiStepLR with int(m*epochs), the
//	           authors' code)
//
// Equal milestones multiply by decay once each. It panics on another
// rounding (config.Validate rejects it).
func StepLearningRate(base, decay float64, milestones []float64, rounding string, epoch, epochs int) float64 {
	lr := base
	for _, m := range milestones {
		at := m * float64(epochs)
		switch rounding {
		case config.MilestoneRound:
			if e := int(math.Round(at)); e > 0 && epoch >= e {
				lr *= decay
			}
		case config.MilestoneTruncate:
			if epoch >= int(at) {
				lr *= decay
			}
		default:
			panic(fmt.Sprintf("train: milestone rounding %q", rounding))
		}
	}
	return lr
}
