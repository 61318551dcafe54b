// Command train benchmarks one bicyc training step side by side with
// PyTorch running the same network, the same loss and the same optimiser,
// with the same number of threads (2 by default), in one invocation:
//
//   - convnet: the BiCyc Stage I step of a task t > 1 at batch 128 on
//     Fashion-MNIST (arch.ConvNet backbone, a 2-class head, the frozen
//     old backbone's forward, D and A mappers 64 -> 2048 -> 64 with exact
//     GELU, CE + L_ac + L_n2o + L_o2n + L_cyc + L_pair with config.Default's
//     weights, SGD momentum 0.9, weight decay 5e-4, clipping at 1.0);
//   - resnet18: backbone + head + CE step of the CIFAR ResNet-18 at
//     3x32x32, batch 64;
//   - resnet18-224 and resnet18-224-last: the same step of the ImageNet-stem
//     ResNet-18 (arch.ResNet18ImageNet) at 3x224x224, batch 16, all
//     trainable, and with the stem and layer1-3 frozen
//     (models.Backbone.FreezeStages(4); requires_grad off and evaluation-mode
//     BatchNorm on PyTorch's side).
//
// PyTorch runs once per OpenMP wait policy (--omp-wait-policy, default
// PASSIVE and libgomp's default) and bicyc is compared with the faster.
// Each row also reports both sides' GFLOP/s, from an analytic count of the
// step's convolutions and linear layers (stepFLOPs), next to a ceiling
// measured in the same invocation: OpenBLAS sgemm on large square matrices
// split over the same goroutines as bicyc's convolutions.
//
// Both sides start from the same weights and batches (written to a
// temporary directory for bench/train_torch.py) and the loss terms of
// their first step must agree, so the timed steps are the same network.
// Our rounds and PyTorch's alternate and the table reports medians, so
// background load on the shared machine hits both sides; it also reports
// each side's peak RSS during its benchmark.
//
// The bicyc side is train.Stage1Step, the very step train's Stage I loop
// runs (graph, gradient routing, old-backbone forward, SGD with clipping),
// with config.Default's settings; the plain step is the same with
// loss.anti_collapse off and no old backbone.
//
// Usage (from the repository root; `make bench-train` installs PyTorch
// first):
//
//	CGO_LDFLAGS=-lopenblas go run ./bench/train [--threads 2] [--rounds 5] [--models convnet,resnet18,resnet18-224,resnet18-224-last]
//
// May import: anything it measures (a command; nothing imports it).
package main
