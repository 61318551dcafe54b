package cuda

import "unsafe"

// The C functions bicyc calls, declared from NVIDIA's documentation (no CUDA header is needed to build):
//
//   - CUDA runtime API (docs.nvidia.com/cuda/cuda-runtime-api): cudaGetDeviceCount, cudaSetDevice,
//     cudaMalloc, cudaFree, cudaMemcpy, cudaMemset, cudaDeviceSynchronize, cudaGetErrorString,
//     cudaRuntimeGetVersion, cudaDriverGetVersion. cudaError_t is a C enum (int32), 0 = cudaSuccess;
//     cudaMemcpyKind: 1 host to device, 2 device to host, 3 device to device.
//   - CUDA driver API (docs.nvidia.com/cuda/cuda-driver-api): cuInit, cuDeviceGet, cuDeviceGetName,
//     cuDeviceTotalMem_v2 (the name and memory of the device; the runtime's cudaDeviceProp struct changes
//     layout between releases, these do not).
//   - cuBLAS (docs.nvidia.com/cuda/cublas): cublasCreate_v2, cublasDestroy_v2, cublasGetVersion_v2,
//     cublasSetMathMode (cublasMath_t: 0 CUBLAS_DEFAULT_MATH, 3 CUBLAS_TF32_TENSOR_OP_MATH), cublasSgemm_v2, cublasDgemm_v2
//     (column-major; cublasOperation_t 0 = N, 1 = T; alpha and beta by host pointer, the default pointer mode).
//   - cuDNN 9 legacy API (docs.nvidia.com/deeplearning/cudnn/latest/api: cudnn_graph for the handle and
//     tensor descriptors, cudnn_cnn for convolutions; the legacy convolution functions are still part of
//     cuDNN 9, only deprecated in favour of the graph API): cudnnGetVersion, cudnnGetErrorString,
//     cudnnCreate, cudnnDestroy, cudnnCreate/Destroy/SetTensor4dDescriptor,
//     cudnnCreate/Destroy/SetFilter4dDescriptor (data type before format), cudnnCreate/Destroy/
//     SetConvolution2dDescriptor, cudnnSetConvolutionMathType (3 = CUDNN_FMA_MATH), cudnnGet
//     ConvolutionForward/BackwardData/BackwardFilterWorkspaceSize, cudnnConvolutionForward,
//     cudnnConvolutionBackwardData, cudnnConvolutionBackwardFilter. cudnnStatus_t 0 = success;
//     cudnnDataType_t 0 float, 1 double; cudnnTensorFormat_t 0 NCHW; cudnnConvolutionMode_t 1
//     CUDNN_CROSS_CORRELATION (what PyTorch and models/ops compute). Pooling (cudnn_ops):
//     cudnnCreate/Destroy/SetPooling2dDescriptor (mode, NaN option, window, padding, stride; 3 =
//     CUDNN_POOLING_MAX_DETERMINISTIC, 0 = CUDNN_NOT_PROPAGATE_NAN), cudnnPoolingForward,
//     cudnnPoolingBackward. Batch norm (cudnn_ops): cudnnDeriveBNTensorDescriptor,
//     cudnnBatchNormalizationForwardTraining (17 arguments: momentum and epsilon as doubles),
//     cudnnBatchNormalizationBackward (19); cudnnBatchNormMode_t 1 = CUDNN_BATCHNORM_SPATIAL.
//     For kernels: cuDevicePrimaryCtxRetain and cuCtxSetCurrent (the runtime's primary context, made current
//     on the calling thread), cuDeviceGetAttribute (75/76: compute capability major/minor),
//     cuModuleLoadData (PTX text), cuModuleGetFunction, cuLaunchKernel (grid and block sizes, shared
//     memory bytes, stream 0, an array of pointers to the arguments, extra NULL), cuGetErrorString.
//     CUresult 0 = CUDA_SUCCESS.
//   - NVRTC (docs.nvidia.com/cuda/nvrtc): nvrtcVersion, nvrtcCreateProgram, nvrtcCompileProgram,
//     nvrtcGetPTXSize, nvrtcGetPTX, nvrtcGetProgramLogSize, nvrtcGetProgramLog, nvrtcDestroyProgram,
//     nvrtcGetErrorString. nvrtcResult 0 = NVRTC_SUCCESS.
//
// None of these has been called on a GPU by this code yet (2026-11-26): docs/gpu.md says how to check them.

type (
	handle = uintptr // an opaque C pointer: a cuBLAS or cuDNN handle, a descriptor
	dptr   = uintptr // a device pointer
)

// rtAPI is the CUDA runtime.
type rtAPI struct {
	getDeviceCount    func(count *int32) int32
	setDevice         func(dev int32) int32
	malloc            func(p *dptr, bytes uintptr) int32
	free              func(p dptr) int32
	memcpyToDevice    func(dst dptr, src unsafe.Pointer, bytes uintptr, kind int32) int32 // cudaMemcpy, kind 1
	memcpyToHost      func(dst unsafe.Pointer, src dptr, bytes uintptr, kind int32) int32 // cudaMemcpy, kind 2
	memset            func(p dptr, value int32, bytes uintptr) int32
	deviceSynchronize func() int32
	getErrorString    func(code int32) string
	runtimeGetVersion func(v *int32) int32
	driverGetVersion  func(v *int32) int32
}

func (a *rtAPI) bind(t *symbolTable) {
	t.bind(&a.getDeviceCount, "cudaGetDeviceCount")
	t.bind(&a.setDevice, "cudaSetDevice")
	t.bind(&a.malloc, "cudaMalloc")
	t.bind(&a.free, "cudaFree")
	t.bind(&a.memcpyToDevice, "cudaMemcpy")
	t.bind(&a.memcpyToHost, "cudaMemcpy")
	t.bind(&a.memset, "cudaMemset")
	t.bind(&a.deviceSynchronize, "cudaDeviceSynchronize")
	t.bind(&a.getErrorString, "cudaGetErrorString")
	t.bind(&a.runtimeGetVersion, "cudaRuntimeGetVersion")
	t.bind(&a.driverGetVersion, "cudaDriverGetVersion")
}

// driverAPI is the part of the driver API used to describe the device.
type driverAPI struct {
	init          func(flags uint32) int32
	deviceGet     func(dev *int32, ordinal int32) int32
	deviceGetName func(name *byte, length int32, dev int32) int32
	deviceTotal   func(bytes *uintptr, dev int32) int32

	primaryCtxRetain func(ctx *handle, dev int32) int32
	ctxSetCurrent    func(ctx handle) int32
	deviceGetAttr    func(v *int32, attr int32, dev int32) int32
	moduleLoadData   func(module *handle, image *byte) int32
	moduleGetFunc    func(fn *handle, module handle, name string) int32
	launchKernel     func(fn handle, gx, gy, gz, bx, by, bz, sharedBytes uint32, stream handle, params *unsafe.Pointer, extra uintptr) int32
	getErrorString   func(code int32, s **byte) int32
}

func (a *driverAPI) bind(t *symbolTable) {
	t.bind(&a.init, "cuInit")
	t.bind(&a.deviceGet, "cuDeviceGet")
	t.bind(&a.deviceGetName, "cuDeviceGetName")
	t.bind(&a.deviceTotal, "cuDeviceTotalMem_v2")
	t.bind(&a.primaryCtxRetain, "cuDevicePrimaryCtxRetain")
	t.bind(&a.ctxSetCurrent, "cuCtxSetCurrent")
	t.bind(&a.deviceGetAttr, "cuDeviceGetAttribute")
	t.bind(&a.moduleLoadData, "cuModuleLoadData")
	t.bind(&a.moduleGetFunc, "cuModuleGetFunction")
	t.bind(&a.launchKernel, "cuLaunchKernel")
	t.bind(&a.getErrorString, "cuGetErrorString")
}

// blasAPI is cuBLAS.
type blasAPI struct {
	create      func(h *handle) int32
	destroy     func(h handle) int32
	getVersion  func(h handle, v *int32) int32
	setMathMode func(h handle, mode int32) int32
	sgemm       func(h handle, ta, tb int32, m, n, k int32, alpha *float32, a dptr, lda int32, b dptr, ldb int32, beta *float32, c dptr, ldc int32) int32
	dgemm       func(h handle, ta, tb int32, m, n, k int32, alpha *float64, a dptr, lda int32, b dptr, ldb int32, beta *float64, c dptr, ldc int32) int32
}

func (a *blasAPI) bind(t *symbolTable) {
	t.bind(&a.create, "cublasCreate_v2")
	t.bind(&a.destroy, "cublasDestroy_v2")
	t.bind(&a.getVersion, "cublasGetVersion_v2")
	t.bind(&a.setMathMode, "cublasSetMathMode")
	t.bind(&a.sgemm, "cublasSgemm_v2")
	t.bind(&a.dgemm, "cublasDgemm_v2")
}

// dnnAPI is cuDNN's legacy convolution API.
type dnnAPI struct {
	getVersion         func() uintptr
	getErrorString     func(status int32) string
	create             func(h *handle) int32
	destroy            func(h handle) int32
	createTensorDesc   func(d *handle) int32
	destroyTensorDesc  func(d handle) int32
	setTensor4d        func(d handle, format, dataType int32, n, c, h, w int32) int32
	createFilterDesc   func(d *handle) int32
	destroyFilterDesc  func(d handle) int32
	setFilter4d        func(d handle, dataType, format int32, k, c, h, w int32) int32
	createConvDesc     func(d *handle) int32
	destroyConvDesc    func(d handle) int32
	setConv2d          func(d handle, padH, padW, strideH, strideW, dilH, dilW int32, mode, computeType int32) int32
	setConvMathType    func(d handle, mathType int32) int32
	fwdWorkspace       func(h, xDesc, wDesc, convDesc, yDesc handle, algo int32, bytes *uintptr) int32
	bwdDataWorkspace   func(h, wDesc, dyDesc, convDesc, dxDesc handle, algo int32, bytes *uintptr) int32
	bwdFilterWorkspace func(h, xDesc, dyDesc, convDesc, dwDesc handle, algo int32, bytes *uintptr) int32
	convForward        func(h handle, alpha unsafe.Pointer, xDesc handle, x dptr, wDesc handle, w dptr, convDesc handle, algo int32, ws dptr, wsBytes uintptr, beta unsafe.Pointer, yDesc handle, y dptr) int32
	convBackwardData   func(h handle, alpha unsafe.Pointer, wDesc handle, w dptr, dyDesc handle, dy dptr, convDesc handle, algo int32, ws dptr, wsBytes uintptr, beta unsafe.Pointer, dxDesc handle, dx dptr) int32
	convBackwardFilter func(h handle, alpha unsafe.Pointer, xDesc handle, x dptr, dyDesc handle, dy dptr, convDesc handle, algo int32, ws dptr, wsBytes uintptr, beta unsafe.Pointer, dwDesc handle, dw dptr) int32
	createPoolDesc     func(d *handle) int32
	destroyPoolDesc    func(d handle) int32
	setPool2d          func(d handle, mode, nanOpt int32, windowH, windowW, padH, padW, strideH, strideW int32) int32
	poolForward        func(h, poolDesc handle, alpha unsafe.Pointer, xDesc handle, x dptr, beta unsafe.Pointer, yDesc handle, y dptr) int32
	poolBackward       func(h, poolDesc handle, alpha unsafe.Pointer, yDesc handle, y dptr, dyDesc handle, dy dptr, xDesc handle, x dptr, beta unsafe.Pointer, dxDesc handle, dx dptr) int32
	deriveBNDesc       func(derived, xDesc handle, mode int32) int32
	bnForwardTraining  func(h handle, mode int32, alpha, beta unsafe.Pointer, xDesc handle, x dptr, yDesc handle, y dptr, bnDesc handle, scale, bias dptr, expAvgFactor float64, runMean, runVar dptr, eps float64, saveMean, saveInvVar dptr) int32
	bnBackward         func(h handle, mode int32, alphaData, betaData, alphaParam, betaParam unsafe.Pointer, xDesc handle, x dptr, dyDesc handle, dy dptr, dxDesc handle, dx dptr, bnDesc handle, scale, dScale, dBias dptr, eps float64, saveMean, saveInvVar dptr) int32
}

func (a *dnnAPI) bind(t *symbolTable) {
	t.bind(&a.getVersion, "cudnnGetVersion")
	t.bind(&a.getErrorString, "cudnnGetErrorString")
	t.bind(&a.create, "cudnnCreate")
	t.bind(&a.destroy, "cudnnDestroy")
	t.bind(&a.createTensorDesc, "cudnnCreateTensorDescriptor")
	t.bind(&a.destroyTensorDesc, "cudnnDestroyTensorDescriptor")
	t.bind(&a.setTensor4d, "cudnnSetTensor4dDescriptor")
	t.bind(&a.createFilterDesc, "cudnnCreateFilterDescriptor")
	t.bind(&a.destroyFilterDesc, "cudnnDestroyFilterDescriptor")
	t.bind(&a.setFilter4d, "cudnnSetFilter4dDescriptor")
	t.bind(&a.createConvDesc, "cudnnCreateConvolutionDescriptor")
	t.bind(&a.destroyConvDesc, "cudnnDestroyConvolutionDescriptor")
	t.bind(&a.setConv2d, "cudnnSetConvolution2dDescriptor")
	t.bind(&a.setConvMathType, "cudnnSetConvolutionMathType")
	t.bind(&a.fwdWorkspace, "cudnnGetConvolutionForwardWorkspaceSize")
	t.bind(&a.bwdDataWorkspace, "cudnnGetConvolutionBackwardDataWorkspaceSize")
	t.bind(&a.bwdFilterWorkspace, "cudnnGetConvolutionBackwardFilterWorkspaceSize")
	t.bind(&a.convForward, "cudnnConvolutionForward")
	t.bind(&a.convBackwardData, "cudnnConvolutionBackwardData")
	t.bind(&a.convBackwardFilter, "cudnnConvolutionBackwardFilter")
	t.bind(&a.createPoolDesc, "cudnnCreatePoolingDescriptor")
	t.bind(&a.destroyPoolDesc, "cudnnDestroyPoolingDescriptor")
	t.bind(&a.setPool2d, "cudnnSetPooling2dDescriptor")
	t.bind(&a.poolForward, "cudnnPoolingForward")
	t.bind(&a.poolBackward, "cudnnPoolingBackward")
	t.bind(&a.deriveBNDesc, "cudnnDeriveBNTensorDescriptor")
	t.bind(&a.bnForwardTraining, "cudnnBatchNormalizationForwardTraining")
	t.bind(&a.bnBackward, "cudnnBatchNormalizationBackward")
}

// nvrtcAPI is NVRTC, which compiles the element-wise kernels to PTX at run time.
type nvrtcAPI struct {
	version        func(major, minor *int32) int32
	createProgram  func(prog *handle, src, name string, numHeaders int32, headers, includeNames uintptr) int32
	compileProgram func(prog handle, numOptions int32, options **byte) int32
	getPTXSize     func(prog handle, size *uintptr) int32
	getPTX         func(prog handle, ptx *byte) int32
	getLogSize     func(prog handle, size *uintptr) int32
	getLog         func(prog handle, log *byte) int32
	destroyProgram func(prog *handle) int32
	getErrorString func(code int32) string
}

func (a *nvrtcAPI) bind(t *symbolTable) {
	t.bind(&a.version, "nvrtcVersion")
	t.bind(&a.createProgram, "nvrtcCreateProgram")
	t.bind(&a.compileProgram, "nvrtcCompileProgram")
	t.bind(&a.getPTXSize, "nvrtcGetPTXSize")
	t.bind(&a.getPTX, "nvrtcGetPTX")
	t.bind(&a.getLogSize, "nvrtcGetProgramLogSize")
	t.bind(&a.getLog, "nvrtcGetProgramLog")
	t.bind(&a.destroyProgram, "nvrtcDestroyProgram")
	t.bind(&a.getErrorString, "nvrtcGetErrorString")
}
