package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// Runtime is the loaded CUDA libraries with the cuBLAS and cuDNN handles of device 0. There is one per
// process (Open); it lives until the process ends.
type Runtime struct {
	Libraries []Library `json:"libraries"`
	Device    Device    `json:"device"`

	rt     rtAPI
	drv    driverAPI
	blas   blasAPI
	dnn    dnnAPI
	nvrtc  nvrtcAPI
	hBLAS  handle
	hDNN   handle
	ctx    handle // the device's primary context, for driver-API calls (kernels)
	ctxErr error  // why ctx is missing
	// ccMajor and ccMinor are the device's compute capability, which NVRTC compiles for.
	ccMajor, ccMinor int32
	callMu           sync.Mutex // cuBLAS and cuDNN handles are not safe for concurrent use
}

// Device describes the GPU the Runtime uses and the versions of the libraries it loaded.
type Device struct {
	Name              string `json:"name"`
	MemoryBytes       uint64 `json:"memory_bytes"`
	ComputeCapability string `json:"compute_capability"`
	Count             int    `json:"device_count"`
	Driver            int    `json:"driver_version"`  // CUDA version the driver supports, e.g. 13000
	RuntimeVer        int    `json:"runtime_version"` // of libcudart, e.g. 13000
	CUBLASVersion     int    `json:"cublas_version"`
	CUDNNVersion      int    `json:"cudnn_version"` // e.g. 91000 for 9.10.0
	NVRTCVersion      string `json:"nvrtc_version"`
}

var (
	openOnce sync.Once
	shared   *Runtime
	openErr  error
)

// Open loads the CUDA libraries, selects device 0 and creates the cuBLAS and cuDNN handles, once per process;
// later calls return the same Runtime or the same error. The error wraps ErrUnavailable and names every
// library that could not be loaded, the functions one lacked, or the CUDA call that failed and its message.
func Open() (*Runtime, error) {
	openOnce.Do(func() {
		env := envDirs()
		shared, openErr = open(env, appendUnique(append([]string{}, env...), wheelAndToolkitDirs()...)[len(env):])
	})
	return shared, openErr
}

// open loads each library from envDirs (BICYC_CUDA_LIB_PATH's folders) first, then through the loader's
// path, then from otherDirs.
func open(envDirs, otherDirs []string) (*Runtime, error) {
	r := &Runtime{}
	loadErr := &LoadError{Dirs: append(append([]string{}, envDirs...), otherDirs...)}
	load := func(s libSpec, bind func(*symbolTable)) {
		h, lib, err := openLib(s, envDirs, otherDirs)
		if err != nil {
			loadErr.Problems = append(loadErr.Problems, err.Error())
			return
		}
		r.Libraries = append(r.Libraries, lib)
		t := &symbolTable{handle: h, lib: lib}
		bind(t)
		if err := t.err(); err != nil {
			loadErr.Problems = append(loadErr.Problems, err.Error())
		}
	}
	load(specDriver, r.drv.bind)
	load(specRT, r.rt.bind)
	load(specBLAS, r.blas.bind)
	load(specDNN, r.dnn.bind)
	load(specNVRTC, r.nvrtc.bind)
	if len(loadErr.Problems) > 0 {
		return nil, loadErr
	}
	if err := r.start(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return r, nil
}

// start selects device 0, describes it and creates the library handles.
func (r *Runtime) start() error {
	var count int32
	if err := r.rtCheck("cudaGetDeviceCount", r.rt.getDeviceCount(&count)); err != nil {
		return err
	}
	if count < 1 {
		return errors.New("cudaGetDeviceCount: no CUDA device")
	}
	r.Device.Count = int(count)
	if err := r.rtCheck("cudaSetDevice(0)", r.rt.setDevice(0)); err != nil {
		return err
	}
	var v int32
	if r.rt.driverGetVersion(&v) == 0 {
		r.Device.Driver = int(v)
	}
	if r.rt.runtimeGetVersion(&v) == 0 {
		r.Device.RuntimeVer = int(v)
	}
	// The driver API describes the device and gives the context kernels run in; the runtime's calls do
	// not need it, so a failure here stops only kernels (ctxErr says why).
	r.ctxErr = r.drvCheck("cuInit", r.drv.init(0))
	if r.ctxErr == nil {
		var dev int32
		if r.ctxErr = r.drvCheck("cuDeviceGet(0)", r.drv.deviceGet(&dev, 0)); r.ctxErr == nil {
			name := make([]byte, 256)
			if r.drv.deviceGetName(&name[0], int32(len(name)), dev) == 0 {
				r.Device.Name = cString(name)
			}
			var mem uintptr
			if r.drv.deviceTotal(&mem, dev) == 0 {
				r.Device.MemoryBytes = uint64(mem)
			}
			r.drv.deviceGetAttr(&r.ccMajor, 75, dev)
			r.drv.deviceGetAttr(&r.ccMinor, 76, dev)
			r.Device.ComputeCapability = fmt.Sprintf("%d.%d", r.ccMajor, r.ccMinor)
			r.ctxErr = r.drvCheck("cuDevicePrimaryCtxRetain", r.drv.primaryCtxRetain(&r.ctx, dev))
		}
	}
	if err := r.blasCheck("cublasCreate", r.blas.create(&r.hBLAS)); err != nil {
		return err
	}
	// CUBLAS_DEFAULT_MATH: tensor cores only where they keep float32's precision, so no TF32 for Sgemm.
	if err := r.blasCheck("cublasSetMathMode(CUBLAS_DEFAULT_MATH)", r.blas.setMathMode(r.hBLAS, 0)); err != nil {
		return err
	}
	if r.blas.getVersion(r.hBLAS, &v) == 0 {
		r.Device.CUBLASVersion = int(v)
	}
	r.Device.CUDNNVersion = int(r.dnn.getVersion())
	if err := r.dnnCheck("cudnnCreate", r.dnn.create(&r.hDNN)); err != nil {
		return err
	}
	var major, minor int32
	if r.nvrtc.version(&major, &minor) == 0 {
		r.Device.NVRTCVersion = fmt.Sprintf("%d.%d", major, minor)
	}
	return nil
}

// Synchronize waits for every queued GPU call to finish and returns the first error CUDA reports.
func (r *Runtime) Synchronize() error {
	return r.rtCheck("cudaDeviceSynchronize", r.rt.deviceSynchronize())
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// rtCheck turns a cudaError_t into an error naming the call.
func (r *Runtime) rtCheck(call string, code int32) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%s: CUDA error %d: %s", call, code, r.rt.getErrorString(code))
}

// blasCheck turns a cublasStatus_t into an error naming the call (cuBLAS has no message function in its
// stable API before 11.4; the numbers are cublasStatus_t's).
func (r *Runtime) blasCheck(call string, code int32) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%s: cuBLAS status %d", call, code)
}

// dnnCheck turns a cudnnStatus_t into an error naming the call, with cuDNN's message.
func (r *Runtime) dnnCheck(call string, code int32) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%s: cuDNN status %d: %s", call, code, r.dnn.getErrorString(code))
}
