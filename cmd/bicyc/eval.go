package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/train"
)

type evalOptions struct {
	run          string
	shrink       float64
	normalize    bool
	fullGaussian bool
	split        string
	oracle       bool
	testFlip     bool
	head         string
	gaussWeight  float64
	calibration  gauss.ClassifierOptions // the classifier calibration flags
}

func newEvalCmd() *cobra.Command {
	opts := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval --run <run-dir> [--split test|val] [--shrink <x>] [--normalize=<bool>] [--full-gaussian] [--off-diag-shrink <x>] [--age-shrink <x>] [--age-bias <x>] [--pool-cov <x>] [--test-flip] [--head gaussian|softmax] [--gaussian-weight <x>] [--oracle]",
		Short: "Evaluate a run's last checkpoint on every seen task's test or validation images",
		Long: `eval classifies the test images of every completed task with the run's backbone and
prototypes, over all seen classes (task-agnostic, TAg) and within each task (task-aware,
TAw). The classifier options default to the run's and can be changed to compare them
without retraining. Choose settings with --split val (the validation split of the training
images, data.val_per_class, never trained on) and read the test set once at the end.

--oracle is a diagnostic of the oracle gap, never a method: it reads the training
images of the classes learned before the last task (which an exemplar-free method
may not keep; nothing is stored) and compares A_last with the stored prototypes,
with the old classes' means replaced by their means under the final backbone, and
with means and covariances replaced; then, per old class, how far the stored mean
is from that mean relative to the class's spread.`,
		Annotations: map[string]string{configHint: "it uses the run's own; --shrink, --normalize, --full-gaussian ... change the classifier"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run, err := train.Open(opts.run, train.Options{Log: io.Discard})
			if err != nil {
				return err
			}
			defer run.Close()
			warnBehind(cmd.ErrOrStderr(), run)
			c := opts.classifier(cmd.Flags(), run.Config().Classifier)
			split := train.Split(opts.split)
			if split != train.SplitTest && split != train.SplitVal {
				return fmt.Errorf("--split %q: want test or val", opts.split)
			}
			if opts.oracle {
				return printOracleGap(cmd.OutOrStdout(), run, c, split)
			}
			ev, err := run.EvaluateSplit(c, split)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "split: %s\n", split)
			if err := printEvaluation(cmd.OutOrStdout(), c, ev.TAg, ev.TAw, run.Stream().Tasks); err != nil {
				return err
			}
			return printConfusion(cmd.OutOrStdout(), run.Confusion(ev, split))
		},
	}
	cmd.Flags().StringVar(&opts.run, "run", "", "run `dir`ectory (required)")
	cmd.Flags().StringVar(&opts.split, "split", "test", "images to evaluate: test, or val (the validation split)")
	cmd.Flags().Float64Var(&opts.shrink, "shrink", 0, "covariance shrinkage (default: the run's classifier.shrink)")
	cmd.Flags().BoolVar(&opts.normalize, "normalize", false, "correlation matrix and L2-normalised features (default: the run's)")
	cmd.Flags().BoolVar(&opts.fullGaussian, "full-gaussian", false, "add log det and prior terms (default: the run's)")
	cmd.Flags().Float64Var(&opts.calibration.OffDiagShrink, "off-diag-shrink", 0, "FeCAM off-diagonal shrinkage (default: the run's classifier.off_diag_shrink)")
	cmd.Flags().Float64Var(&opts.calibration.AgeShrink, "age-shrink", 0, "extra shrinkage per task since a class's own (default: the run's classifier.age_shrink)")
	cmd.Flags().Float64Var(&opts.calibration.AgeBias, "age-bias", 0, "distance added per task since a class's own (default: the run's classifier.age_bias)")
	cmd.Flags().Float64Var(&opts.calibration.PoolCov, "pool-cov", 0, "weight of the pooled covariance of all classes, in [0, 1] (default: the run's classifier.pool_cov)")
	cmd.Flags().BoolVar(&opts.testFlip, "test-flip", false, "average each image's scores with its horizontal mirror's (default: the run's classifier.test_flip)")
	cmd.Flags().StringVar(&opts.head, "head", "", "the classifier over the prototypes, gaussian or softmax (default: the run's classifier.head)")
	cmd.Flags().Float64Var(&opts.gaussWeight, "gaussian-weight", 0, "with --head softmax, add this times the Gaussian classifier's score to the head's (default: the run's classifier.gaussian_weight)")
	cmd.Flags().BoolVar(&opts.oracle, "oracle", false, "diagnostic: A_last with the old classes' prototypes recomputed from their training images under the final backbone (reads old images; never a method)")
	cmd.MarkFlagRequired("run")
	return cmd
}

// classifier returns c, the run's classifier options, with the flags the
// user changed applied.
func (o *evalOptions) classifier(f *pflag.FlagSet, c gauss.ClassifierOptions) gauss.ClassifierOptions {
	if f.Changed("shrink") {
		c.Shrink = o.shrink
	}
	if f.Changed("normalize") {
		c.Normalize = o.normalize
	}
	if f.Changed("full-gaussian") {
		c.FullGaussian = o.fullGaussian
	}
	if f.Changed("off-diag-shrink") {
		c.OffDiagShrink = o.calibration.OffDiagShrink
	}
	if f.Changed("age-shrink") {
		c.AgeShrink = o.calibration.AgeShrink
	}
	if f.Changed("pool-cov") {
		c.PoolCov = o.calibration.PoolCov
	}
	if f.Changed("age-bias") {
		c.AgeBias = o.calibration.AgeBias
	}
	if f.Changed("test-flip") {
		c.TestFlip = o.testFlip
	}
	if f.Changed("head") {
		c.Head = gauss.Head(o.head)
	}
	if f.Changed("gaussian-weight") {
		c.GaussianWeight = o.gaussWeight
	}
	return c
}

func printClassifier(w io.Writer, c gauss.ClassifierOptions) {
	head := c.Head
	if head == "" {
		head = gauss.HeadGaussian
	}
	fmt.Fprintf(w, "classifier: head %s, gaussian_weight %g, shrink %g, normalize %v, full_gaussian %v, off_diag_shrink %g, age_shrink %g, age_bias %g, pool_cov %g, test_flip %v\n",
		head, c.GaussianWeight, c.Shrink, c.Normalize, c.FullGaussian, c.OffDiagShrink, c.AgeShrink, c.AgeBias, c.PoolCov, c.TestFlip)
}

func printEvaluation(w io.Writer, c gauss.ClassifierOptions, tag, taw []float64, tasks [][]int) error {
	printClassifier(w, c)
	fmt.Fprintf(w, "%-6s %-24s %7s %7s\n", "task", "classes", "TAg %", "TAw %")
	var sumAg, sumAw, n float64
	for u := range tag {
		k := float64(len(tasks[u]))
		fmt.Fprintf(w, "%-6d %-24s %7.2f %7.2f\n", u+1, fmt.Sprint(tasks[u]), 100*tag[u], 100*taw[u])
		sumAg += k * tag[u]
		sumAw += k * taw[u]
		n += k
	}
	_, err := fmt.Fprintf(w, "%-31s %7.2f %7.2f\n", "A_last (class-weighted)", 100*sumAg/n, 100*sumAw/n)
	return err
}
