// Package train is bicyc's training engine: it runs a class-incremental
// task stream with gorgonia on the CPU, following docs/method.md.
//
// For every task t it runs
//
//	Stage I   joint training of the backbone f_t, a task head, and (t > 1)
//	          the distiller D (new -> old) and adapter A (old -> new):
//	          CE + lambda_bi (L_n2o + L_o2n) + lambda_cyc L_cyc
//	             + lambda_pair L_pair + alpha L_ac
//	Stage II  a fine-tune of A on cached features, Monte Carlo transport of
//	          every old class's Gaussian through A, and new-class statistics
//	Eval      the task-agnostic Bayes classifier over all seen classes on
//	          every seen task's test set (TAg) and within each task (TAw)
//
// and then writes an atomic checkpoint, so a killed run resumes after its
// last completed task; the checkpoint also holds the backbone's features of
// the validation images, on which an export fits its calibration, so that
// Export reads only the run directory and runs no network. Prototypes (one Gaussian per class) are the only
// memory of old tasks: no image of an old task is kept.
//
// Entry points: New starts a run, Resume continues one, Fork starts one from
// another run's first task (task 1 does not depend on the method or the
// later-task settings, see config.LaterTaskKeys), Learn adds a task of new classes
// to a finished run, Export writes its ONNX model directory, Open reads a
// run without writing into it (evaluation). A run has one writer at a time:
// New, Resume, Fork and Rescore hold its lock (rundir.Lock) until Close.
// Complete brings a sweep's cell to its end from wherever it stopped.
// The records a run writes (metrics.json, stream.json) are package
// rundir's types, so that readers need not link this package.
// Stage1Step is one Stage I training step, the graph Run trains with,
// exported for benchmarks.
//
// The method is chosen by config: bicyc (default), adagauss (one-way: D in
// Stage I, a fresh A after the task) and finetune (no distillation, no
// transport). Gaussian math lives in package gauss, networks and custom ops
// in package models, metrics in package metrics.
//
// May import: the training side (config, data, models, gpu, pretrained, export) and the formats (bundle, rundir).
package train
