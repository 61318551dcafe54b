// Package sweep runs experiment grids: seed x method, plus with the
// ablation the bicyc runs with L_bi and/or L_cyc off (paper Table
// "Contributions of L_bi and L_cyc"), in one process or spread over many
// machines that share the sweep directory (docs/cluster.md).
//
// A Spec (the YAML of configs/sweeps/) says which runs a sweep has; Spec.Plan
// lists them, each a Variant (method and ablated losses) and a seed, in
// <out>/<method>[-<ablation>]-s<seed>. NewPlan turns them into cells: each
// run with its resolved configuration and the earlier cell it waits for.
// The runs of one seed share their first task (train.Fork), and a run that
// differs from an earlier one only in classifier.* keys (a classifier
// variant) is not trained at all but evaluated again from that run's
// checkpoints (train.Rescore); cells group into waves that can run at once.
// Plan.Write freezes the plan into the directory (sweep.json and
// cells/<run>.yaml), so workers elsewhere read it with ReadPlan.
//
// RunCell runs one cell, idempotent and resumable, under a lock
// (package lockfile) that another worker takes over only when the holder's
// process is gone (same host and boot) or its lease expired; it records
// the outcome in cells/<run>.json. ReadStatus reads every cell's state
// from the directory alone; package report merges the runs from it. Run
// runs every cell in plan order in one process. WriteSlurm writes the
// plan as Slurm job arrays (each task after its own source's task,
// aftercorr) and a report job, and
// SubmitSlurm submits them; WriteKubernetes writes Kubernetes Indexed Jobs.
//
// The package plans, records and reads sweeps without linking the
// training engine: RunCell and Run train through the Trainer in Options
// (train.Complete, wired by bicyc sweep), and a run's progress is read from
// its records (package rundir).
//
// Workers may run cells of one directory concurrently; the locks keep a
// cell to one worker. Writing the plan, and one-process runs, should not
// race with another process writing the plan of the same directory.
//
// May import: train (it runs cells), rundir, config, durable, lockfile.
package sweep
