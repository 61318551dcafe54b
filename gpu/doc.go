// Package gpu is bicyc's training on an NVIDIA GPU while it is being built: the device check that runs a
// few layers' forward pass and gradients on the GPU and on the CPU from the same inputs and compares them
// (Check: `bicyc doctor --gpu`, bicyc-gpucheck), and the probe that says which GPU CUDA loads (Probe:
// train.device cuda). The pieces of the GPU path live under gpu/internal, where Go lets nothing outside
// this directory import them until the training step uses them (docs/gpu.md):
//
//   - gpu/internal/cuda loads the CUDA libraries at run time (dlopen through purego, no cgo) and binds
//     the calls of the CUDA runtime, cuBLAS, cuDNN, NVRTC and the driver that the ops need;
//   - gpu/internal/cudaops holds the gorgonia ops that run on the GPU (convolution, max pooling, batch
//     norm, matrix product, the NVRTC kernels' ops, SGD), each with its gradients;
//   - gpu/internal/cudakernels holds the kernels' CUDA C sources, also compiled on the host for the tests;
//   - gpu/internal/cudamock is the tests' CPU stand-in for the CUDA libraries.
//
// May import: models/ops, models/optim, gorgonia, purego (through gpu/internal); imported by train, cmd/bicyc, cmd/bicyc-gpucheck.
package gpu
