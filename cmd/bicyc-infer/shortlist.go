package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/gauss"
)

// shortlistOptions are the shortlist command's flags.
type shortlistOptions struct {
	model *modelOptions
	out   string
	share float64
	wait  time.Duration
}

func newShortlistCmd(model *modelOptions, stdout io.Writer) *cobra.Command {
	o := &shortlistOptions{model: model}
	cmd := &cobra.Command{
		Use:   "shortlist --model <dir> --out <new-dir> [--share <s>]",
		Short: "Give a model of many classes a shortlist (or remove it with --share 0)",
		Long: fmt.Sprintf(`shortlist writes a copy of the model whose classifier scores every class approximately
from an int8 table and only the best --share of them (at least %d) exactly: at batch 1 about
2.4 times faster than exact scores at 5000 classes. Models of %d classes or more are given
one when exported or grown by add-classes; this command sets it on models written before,
or changes its share. Before adopting it, the size is checked on features drawn from the
class Gaussians: doubled until the exact closest class is kept for %.1f %% of them, or
refused (the model then keeps exact scores). See docs/classes.md, "Shortlist".`,
			gauss.ShortlistMinSize, gauss.ShortlistMinClasses, 100*classgraph.ShortlistCheckTop1),
		Annotations: map[string]string{modelFlagsUsed: "model"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.model.model == "" || o.out == "" {
				return fmt.Errorf("shortlist needs --model and --out")
			}
			var sl *bundle.Shortlist
			err := asRepositoryWriter(cmd.Context(), "shortlist", o.out, o.wait, cmd.ErrOrStderr(), func() error {
				var err error
				sl, err = author.Shortlist(o.model.model, o.out, o.share)
				return err
			})
			if err != nil {
				return flagError(err)
			}
			switch {
			case sl == nil:
				fmt.Fprintf(stdout, "wrote %s: every class scored exactly (no shortlist applies)\n", o.out)
			case sl.Size == 0:
				fmt.Fprintf(stdout, "wrote %s: every class scored exactly: the largest shortlist tried kept the exact closest class for only %.2f %% of %d check features\n", o.out, 100*sl.CheckTop1, sl.CheckSamples)
			default:
				fmt.Fprintf(stdout, "wrote %s: shortlist of %d classes, keeping the exact closest class for %.2f %% of %d check features\n", o.out, sl.Size, 100*sl.CheckTop1, sl.CheckSamples)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "", "new model `dir`ectory to write (required)")
	cmd.Flags().Float64Var(&o.share, "share", gauss.DefaultShortlist, "share of the classes scored exactly per image; 0 = every class")
	addWaitFlag(cmd, &o.wait)
	return cmd
}
