// Package sweep runs experiment grids: seed x method, plus with the
// ablation the bicyc runs with L_bi and/or L_cyc off (paper Table
// "Contributions of L_bi and L_cyc").
//
// A Spec (the YAML of configs/sweeps/) says which runs a sweep has; Plan
// lists them in the order Run trains them, each a Variant (method and
// ablated losses) and a seed, in <out>/<method>[-<ablation>]-s<seed>. Run
// trains them one after another with package train: finished runs are
// skipped and started ones resumed, so a sweep can be stopped and started
// again at any point, and the runs of one seed share their first task
// (train.Fork); a run that differs from an earlier one only in classifier.*
// keys (a classifier variant) is not trained at all but evaluated again
// from that run's checkpoints (train.Rescore). sweep.json (Record) records the plan and the state of
// every run; package report reads it to write the sweep's report.
//
// Nothing in the package is safe for concurrent use on the same
// directory: run one sweep per output directory.
package sweep
