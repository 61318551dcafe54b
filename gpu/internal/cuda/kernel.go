package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Kernel is one CUDA C function compiled by NVRTC at run time for this device and loaded with the driver
// API. bicyc's kernel sources live in package gpu/internal/cudakernels, whose tests compile and run the same text
// on the host; NVRTC itself first compiles them on the first GPU they meet (the device check runs every
// kernel).
type Kernel struct {
	r    *Runtime
	name string
	fn   handle
}

// Compile compiles source (CUDA C with an extern "C" __global__ function called name) for the device's
// compute capability and loads it. The error carries NVRTC's log.
func (r *Runtime) Compile(name, source string) (*Kernel, error) {
	var prog handle
	if code := r.nvrtc.createProgram(&prog, source, name+".cu", 0, 0, 0); code != 0 {
		return nil, fmt.Errorf("nvrtcCreateProgram(%s): %s", name, r.nvrtc.getErrorString(code))
	}
	defer r.nvrtc.destroyProgram(&prog)
	arch := cString0(fmt.Sprintf("--gpu-architecture=compute_%d%d", r.ccMajor, r.ccMinor))
	opts := []*byte{&arch[0]}
	if code := r.nvrtc.compileProgram(prog, int32(len(opts)), &opts[0]); code != 0 {
		var n uintptr
		log := ""
		if r.nvrtc.getLogSize(prog, &n) == 0 && n > 1 {
			b := make([]byte, n)
			if r.nvrtc.getLog(prog, &b[0]) == 0 {
				log = cString(b)
			}
		}
		return nil, fmt.Errorf("nvrtcCompileProgram(%s, compute_%d%d): %s: %s", name, r.ccMajor, r.ccMinor, r.nvrtc.getErrorString(code), log)
	}
	runtime.KeepAlive(arch)
	var n uintptr
	if code := r.nvrtc.getPTXSize(prog, &n); code != 0 || n == 0 {
		return nil, fmt.Errorf("nvrtcGetPTXSize(%s): %s", name, r.nvrtc.getErrorString(code))
	}
	ptx := make([]byte, n)
	if code := r.nvrtc.getPTX(prog, &ptx[0]); code != 0 {
		return nil, fmt.Errorf("nvrtcGetPTX(%s): %s", name, r.nvrtc.getErrorString(code))
	}
	k := &Kernel{r: r, name: name}
	err := r.withContext(func() error {
		var module handle
		if err := r.drvCheck("cuModuleLoadData("+name+")", r.drv.moduleLoadData(&module, &ptx[0])); err != nil {
			return err
		}
		return r.drvCheck("cuModuleGetFunction("+name+")", r.drv.moduleGetFunc(&k.fn, module, name))
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// BlockThreads is the number of threads of each block Launch starts.
const BlockThreads = 256

// Launch runs the kernel on n threads in blocks of BlockThreads (the kernel must ignore indices >= n). args
// are the kernel's parameters in order: *Buffer (a device pointer), int32 or float32.
func (k *Kernel) Launch(n int, args ...any) error {
	if n <= 0 {
		return nil
	}
	const block = BlockThreads
	// cuLaunchKernel reads each parameter through a pointer: keep the values in one Go slice each.
	vals := make([]uint64, len(args))
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case *Buffer:
			vals[i] = uint64(v.ptr)
		case int32:
			vals[i] = uint64(uint32(v))
		case float32:
			*(*float32)(unsafe.Pointer(&vals[i])) = v
		default:
			return fmt.Errorf("cuda: kernel %s: argument %d is %T, want *Buffer, int32 or float32", k.name, i, a)
		}
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	grid := uint32((n + block - 1) / block)
	var params *unsafe.Pointer
	if len(ptrs) > 0 {
		params = &ptrs[0]
	}
	r := k.r
	err := r.withContext(func() error {
		return r.drvCheck("cuLaunchKernel("+k.name+")", r.drv.launchKernel(k.fn, grid, 1, 1, block, 1, 1, 0, 0, params, 0))
	})
	runtime.KeepAlive(vals)
	runtime.KeepAlive(ptrs)
	return err
}

// withContext runs f on one OS thread with the device's primary context current: the driver API, unlike
// the runtime API, does not make it current by itself, and goroutines move between threads.
func (r *Runtime) withContext(f func() error) error {
	r.callMu.Lock()
	defer r.callMu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r.ctx == 0 {
		return fmt.Errorf("cuda: no primary context for kernels: %w", errors.Join(r.ctxErr, errors.New("context not created")))
	}
	if err := r.drvCheck("cuCtxSetCurrent", r.drv.ctxSetCurrent(r.ctx)); err != nil {
		return err
	}
	return f()
}

// drvCheck turns a CUresult into an error naming the call, with the driver's message.
func (r *Runtime) drvCheck(call string, code int32) error {
	if code == 0 {
		return nil
	}
	var p *byte
	msg := "unknown error"
	if r.drv.getErrorString(code, &p) == 0 && p != nil {
		msg = goString(p)
	}
	return fmt.Errorf("%s: CUDA driver error %d: %s", call, code, msg)
}

// cString0 returns s as a NUL-terminated byte slice.
func cString0(s string) []byte { return append([]byte(s), 0) }

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}
