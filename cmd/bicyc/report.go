package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/report"
)

// reportOptions are the flags of bicyc report.
type reportOptions struct {
	publish, readme, sizes string
}

func newReportCmd() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report <run-or-sweep-dir> | --sizes <dest> <sweep-dir>...",
		Short: "Write report.md, summary.json and PNG figures for a run, a sweep or a directory of runs",
		Long: `report reads a run directory (metrics.json), a sweep directory (sweep.json) or a
directory whose sub-directories are runs, and writes into it report.md (date, machine,
the paper's tables in %: A_last, A_inc, F_last as mean ± std over seeds for TAg and TAw,
the L_bi x L_cyc ablation grid, wall times), summary.json with the same numbers, and
figures/*.png: accuracy matrices, per-step gains of bicyc over the other methods,
A_last per step and drift diagnostics. Unfinished runs are listed but left out of the
tables, so a report can be written while a sweep is still training.

--publish DEST then copies the report, its figures, sweep.json and every run's small
text files (config.yaml, stream.json, metrics.json, metrics.csv, acc_tag.csv,
acc_taw.csv, log.txt; never checkpoints or models) into DEST, replacing DEST as a whole
through a temporary sibling directory and renames. --readme FILE also regenerates the
section of FILE between the lines
  <!-- bicyc-results:begin -->
  <!-- bicyc-results:end -->
with this command line, the date, the machine, the number of runs and their wall time,
the results table, the ablation grid and two figures linked from DEST; the rest of FILE
is left byte for byte. Example:
  bicyc report runs/sweeps/fmnist-t5-e10 --publish docs/results/fmnist-t5-e10 --readme README.md

--sizes DEST compares sweeps that differ only in data.train_per_class: it writes
DEST/sizes.md (TAg A_last, F_last and TAw A_last per method and size, mean ± std over
seeds, and every seed's A_last) and DEST/figures/a-last-by-size.png. Example:
  bicyc report --sizes docs/results/small-tasks runs/sweeps/fmnist-t5-small-{30,100,500}`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.sizes != "" {
				return cobra.MinimumNArgs(1)(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.sizes != "" {
				c, err := report.NewSizeCurve(args)
				if err != nil {
					return err
				}
				if err := report.WriteSizeCurve(c, o.sizes); err != nil {
					return err
				}
				fmt.Fprint(cmd.OutOrStdout(), c.Markdown())
				return nil
			}
			return runReport(cmd, args[0], o)
		},
	}
	cmd.Flags().StringVar(&o.sizes, "sizes", "", "compare sweeps of different data.train_per_class; write the table and figure to `dir`")
	cmd.Flags().StringVar(&o.publish, "publish", "", "copy the report and the runs' small files into `dir`, replacing it")
	cmd.Flags().StringVar(&o.readme, "readme", "", "regenerate the results section of this Markdown `file` (needs --publish)")
	return cmd
}

func runReport(cmd *cobra.Command, dir string, o reportOptions) error {
	out := cmd.OutOrStdout()
	if o.publish == "" {
		if o.readme != "" {
			return errors.New("--readme needs --publish: the README's results section links into the published directory")
		}
		res, err := report.Generate(dir, report.Options{})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s (%d figures)\n", res.Markdown, len(res.Figures))
		return nil
	}
	pub, err := report.Publish(dir, report.Publication{Dest: o.publish, Readme: o.readme}, report.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (%d figures)\npublished %d files to %s\n", pub.Report.Markdown, len(pub.Report.Figures), len(pub.Files), pub.Dest)
	if o.readme != "" {
		fmt.Fprintf(out, "updated the results section of %s\n", o.readme)
	}
	return nil
}
