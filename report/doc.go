// Package report runs experiment sweeps and turns run directories into
// reports: the paper's tables and figures from the files `bicyc train`
// writes (config.yaml, metrics.json).
//
// A sweep (Spec, RunSweep) trains a grid of runs one after another, seed x
// method, plus with the ablation the bicyc runs with L_bi and/or L_cyc off
// (paper Table "Contributions of L_bi and L_cyc"). Each run lives in
// <out>/<method>[-<ablation>]-s<seed>; finished runs are skipped and
// started ones resumed, so a sweep can be stopped and started again at any
// point. sweep.json records the plan and the state of every run.
//
// A report (Generate) covers a run, a sweep, or a directory of runs. It
// groups finished runs by Variant (method and ablated losses), aggregates
// A_last, A_inc and F_last over seeds as mean +- sample standard deviation
// (Stat), and writes report.md, summary.json and PNG figures drawn with
// gonum.org/v1/plot: per-run TAg accuracy matrices, the per-step gain of
// bicyc over each other method (paper Figure 3), A_last after each task
// with a +-std band, and drift diagnostics (mu-L2, Sigma-Frobenius,
// symmetric KL, AD-%) when the runs recorded them (eval.drift).
//
// Metrics are fractions in [0, 1] in every Go value and JSON file, percent
// in report.md and the figures, as in the paper. Tasks are numbered from 1
// in the report and from 0 in Go slices.
//
// Reading and aggregating never modify the runs. Nothing in the package is
// safe for concurrent use on the same directory: run one sweep per output
// directory.
package report
