// Command infer benchmarks bicyc's inference (package infer on ONNX
// Runtime) side by side with PyTorch eager running the same network, in
// one invocation, with the same number of intra-op threads (1 by default,
// infer.DefaultThreads):
//
//   - in-process latency p50/p99 of one image at batch 1, from a decoded
//     image to its top-k (infer.Classifier.Classify vs the PyTorch model's
//     preprocessing, backbone, prototype scores and top-k);
//   - throughput at batch 256 by default (--batch; img/s), decoded images in;
//   - whole-process wall time of `bicyc-infer one.png --model DIR` vs a
//     Python process that imports torch, loads the model and classifies
//     the same image (bench/infer_torch.py once), and the peak RSS of each;
//   - peak RSS of both in-process benchmark processes.
//
// Our rounds and PyTorch's alternate (PyTorch runs as a worker process that
// waits while ours runs, see compare.Worker), and the tables report medians
// over rounds, so background load on the shared machine hits both sides.
// PyTorch is run twice per round: eager as loaded from the checkpoint
// (separate eval-mode BatchNorm layers) and with BN folded into the convs,
// the form backbone.onnx has.
//
// Before timing, it checks that both sides compute the same network: the
// top-k distances of the first 256 Fashion-MNIST test images must agree.
//
// Usage (from the repository root; `make bench-infer` does all of it):
//
//	go run ./bench/infer --model /tmp/bicyc-bench/m/model [--backbone FILE] [--bin bin/bicyc-infer] [--threads 1]
//
// Without --model it runs on the small model the tests build (package
// internal/testmodel/small: a random convnet, 3 classes, with its backbone
// weights for PyTorch): the smallest comparison, which `make bench-smoke`
// runs in CI to check that the benchmark and its parity check still work.
//
// --torch=false measures bicyc alone (no PyTorch, no parity check, no
// targets), for example a photo model whose backbone bench/bicyc_torch.py
// does not build; --photo-size WIDTHxHEIGHT feeds RGB images of that size,
// so preprocessing does a photo's work; --batch sets the throughput batch.
//
// --classes 10,100,1000,5000,20000 sweeps class counts instead (issue 34):
// starting from --model, it grows one model directory per count with
// author.AddClasses (each new class learned from 6 Fashion-MNIST test images
// of one label, as `bicyc-infer add-classes` would), times each step, and
// prints per count the batch-1 p50/p99, batch throughput, whole-process
// `bicyc-infer one.png` time and peak RSS, this process's peak RSS with the
// model open, the directory's size and its growth per added class, and the
// load average before and after; --csv FILE writes the same as CSV. The
// published table is docs/results/inference-classes.md.
//
// --backbone defaults to the run's latest checkpoint,
// DIR/../checkpoints/<latest>/backbone.safetensors. Python is Debian's
// /usr/bin/python3 with python3-torch and python3-pil
// (bench/install-torch.sh).
//
// May import: anything it measures (a command; nothing imports it).
package main
