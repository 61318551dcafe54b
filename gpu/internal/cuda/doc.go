// Package cuda loads NVIDIA's CUDA libraries at run time and calls the few functions bicyc's GPU ops need:
// device memory (the CUDA runtime), matrix products (cuBLAS), convolutions, max pooling and batch norm
// (cuDNN 9's legacy API), and kernels compiled at run time (NVRTC; their sources are in package
// gpu/internal/cudakernels) and launched through the driver API.
//
// Nothing here links against CUDA: the libraries are opened with dlopen (github.com/ebitengine/purego, which
// also works in binaries built with CGO_ENABLED=0), so every bicyc binary builds and runs on a machine
// without a GPU, and Open says exactly which library it could not load and where it looked. The function
// signatures are declared in this package from NVIDIA's documentation (no CUDA headers are needed to build);
// see calls.go for the list and its sources.
//
// Where the libraries are looked for, in order, for each library (see SearchDirs):
//
//  1. the folders in BICYC_CUDA_LIB_PATH (colon-separated), if set;
//  2. the dynamic loader's own search (LD_LIBRARY_PATH, the ld.so cache), by file name;
//  3. the lib folders of the nvidia-* Python wheels a PyTorch installation carries
//     (site-packages/nvidia/*/lib of virtual environments, conda, the system Python), a CUDA toolkit
//     (/usr/local/cuda/lib64) and the driver's usual folders.
//
// Libraries: the driver (libcuda.so.1), the runtime (libcudart.so.13 or .12), cuBLAS and cuBLASLt
// (libcublas.so.13/.12), cuDNN 9 (libcudnn.so.9, with its sub-libraries libcudnn_graph, _ops, _cnn and the
// engine libraries preloaded from the same folder, since libcudnn.so.9 opens them by name) and NVRTC
// (libnvrtc.so.13/.12).
//
// All calls run on device 0 and CUDA's legacy default stream, so every call is ordered after the previous
// one and a copy back to the host returns finished results. The Runtime is shared by the whole process
// (Open), safe for concurrent use as far as CUDA's own handles are (cuBLAS and cuDNN handles are not:
// callers serialise their use; the ops of one gorgonia graph run one at a time).
//
// Float math: cuBLAS runs in CUBLAS_DEFAULT_MATH (set explicitly: no TF32, which needs
// CUBLAS_TF32_TENSOR_OP_MATH) and cuDNN convolutions in CUDNN_FMA_MATH, so float32 stays float32 and results
// can be compared with the CPU's to about 1e-5 relative; the device check would show TF32 as differences
// near 1e-3.
//
// May import: nothing of bicyc; only gpu/... can import it.
package cuda
