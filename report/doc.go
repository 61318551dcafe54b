// Package report turns run directories into reports: the paper's tables
// and figures from the files `bicyc train` writes (config.yaml,
// metrics.json, read through package rundir) and, for a sweep, its record
// (sweep.json, package sweep). It reads runs and never trains them, and
// links no training code.
//
// A report (Generate) covers a run, a sweep, or a directory of runs. It
// groups finished runs by sweep.Variant (method and ablated losses), aggregates
// A_last, A_inc and F_last over seeds as mean +- sample standard deviation
// (Stat), and writes report.md, summary.json and PNG figures drawn with
// gonum.org/v1/plot: per-run TAg accuracy matrices, the per-step gain of
// bicyc over each other method (paper Figure 3), A_last after each task
// with a +-std band, and drift diagnostics (mu-L2, Sigma-Frobenius,
// symmetric KL, AD-%) when the runs recorded them (eval.drift).
//
// Publish puts a report where the repository keeps its results: it writes
// the report, copies it with the runs' small text files (never checkpoints
// or models) into a publication directory such as docs/results/<name>,
// replacing that directory as a whole through a temporary sibling and
// renames, and regenerates the results section of a README, the lines
// between
//
//	<!-- bicyc-results:begin -->
//	<!-- bicyc-results:end -->
//
// with the command that made it, the date, machine, number of runs and
// wall time, report.md's results table and ablation grid, and two figures
// linked from the publication. The rest of the README is left byte for
// byte, so the results section is regenerated, never typed by hand:
//
//	bicyc report runs/sweeps/fmnist-t5-e10 \
//	    --publish docs/results/fmnist-t5-e10 --readme README.md
//
// Runs forked from another run's task 1 (train.Fork, as sweeps do for
// every method and ablation cell after a seed's first run) are marked in
// the report: their wall time leaves task 1 out, their stage times include
// it (Run.FirstTaskFrom).
//
// Metrics are fractions in [0, 1] in every Go value and JSON file, percent
// in report.md and the figures, as in the paper. Tasks are numbered from 1
// in the report and from 0 in Go slices.
//
// Reading and aggregating never modify the runs. Generate and Publish are
// not safe for concurrent use on the same directory.
//
// May import: rundir, config, durable, kernels; never gorgonia, train (TestForbiddenImports).
package report
