package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/report"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report <run-or-sweep-dir>",
		Short: "Write report.md, summary.json and PNG figures for a run, a sweep or a directory of runs",
		Long: `report reads a run directory (metrics.json), a sweep directory (sweep.json) or a
directory whose sub-directories are runs, and writes into it report.md (date, machine,
the paper's tables in %: A_last, A_inc, F_last as mean ± std over seeds for TAg and TAw,
the L_bi x L_cyc ablation grid, wall times), summary.json with the same numbers, and
figures/*.png: accuracy matrices, per-step gains of bicyc over the other methods,
A_last per step and drift diagnostics. Unfinished runs are listed but left out of the
tables, so a report can be written while a sweep is still training.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := report.Generate(args[0], report.Options{})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%d figures)\n", res.Markdown, len(res.Figures))
			return nil
		},
	}
}
