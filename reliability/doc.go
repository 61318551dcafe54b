// Package reliability holds bicyc's cross-package crash tests; it has no
// code outside its tests.
//
// The tests build the real bicyc command once, train a small, fast
// configuration (the quick profile on two Fashion-MNIST tasks, 100 training
// and 50 test images per class, one thread) and SIGKILL the process at
// chosen and random moments: mid-epoch, while a checkpoint is being written
// (right after "task N done"), and while a model directory is being
// exported. After every kill they check what a reader of the run directory
// can see:
//
//   - every visible checkpoints/task-NN directory, and the one
//     checkpoints/latest names, loads with train.LoadCheckpoint; temporary
//     directories are dot-prefixed and ignored (and counted, as evidence
//     that a kill landed inside a write);
//   - metrics.json, config.yaml and stream.json parse, and metrics.json
//     never claims more tasks than the latest checkpoint;
//   - a model directory is absent or passes bundle.Open, never half-written,
//     and an interrupted export leaves the previous one exactly as it was.
//
// Then `bicyc train --resume` finishes the run, and its metrics.json must
// equal an uninterrupted run's exactly, timings aside (training is
// deterministic given the seed), as must the exported model files.
//
// The short form runs in the normal suite (a few minutes on two shared
// cores; skipped with -short, like package train's end-to-end tests).
// BICYC_LONG_TESTS=1 kills at many more points and random moments.
// The tests link package train, hence gorgonia: build them with
// CGO_LDFLAGS=-lopenblas.
//
// May import: anything it tests (tests only).
package reliability
