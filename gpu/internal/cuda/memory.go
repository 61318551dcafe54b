package cuda

import (
	"fmt"
	"unsafe"
)

// Buffer is a block of device memory. Free releases it; a Buffer is not safe for concurrent use.
type Buffer struct {
	r     *Runtime
	ptr   dptr
	bytes int
}

// Alloc returns bytes of uninitialised device memory (cudaMalloc).
func (r *Runtime) Alloc(bytes int) (*Buffer, error) {
	if bytes <= 0 {
		return &Buffer{r: r}, nil
	}
	var p dptr
	if err := r.rtCheck(fmt.Sprintf("cudaMalloc(%d bytes)", bytes), r.rt.malloc(&p, uintptr(bytes))); err != nil {
		return nil, err
	}
	return &Buffer{r: r, ptr: p, bytes: bytes}, nil
}

// Bytes returns the buffer's size.
func (b *Buffer) Bytes() int { return b.bytes }

// Free releases the memory; it is idempotent.
func (b *Buffer) Free() error {
	if b == nil || b.ptr == 0 {
		return nil
	}
	err := b.r.rtCheck("cudaFree", b.r.rt.free(b.ptr))
	b.ptr, b.bytes = 0, 0
	return err
}

// Zero sets every byte to 0 (cudaMemset).
func (b *Buffer) Zero() error {
	if b.bytes == 0 {
		return nil
	}
	return b.r.rtCheck("cudaMemset", b.r.rt.memset(b.ptr, 0, uintptr(b.bytes)))
}

// Upload copies src into the start of dst (cudaMemcpy, host to device). src must fit.
func Upload[T float32 | float64](dst *Buffer, src []T) error {
	n := len(src) * int(unsafe.Sizeof(src[0]))
	if n > dst.bytes {
		return fmt.Errorf("cuda: upload of %d bytes into a buffer of %d", n, dst.bytes)
	}
	if n == 0 {
		return nil
	}
	return dst.r.rtCheck("cudaMemcpy(host to device)", dst.r.rt.memcpyToDevice(dst.ptr, unsafe.Pointer(&src[0]), uintptr(n), 1))
}

// Download copies the start of src into dst (cudaMemcpy, device to host); it returns once the GPU has
// finished every call queued before it.
func Download[T float32 | float64](dst []T, src *Buffer) error {
	n := len(dst) * int(unsafe.Sizeof(dst[0]))
	if n > src.bytes {
		return fmt.Errorf("cuda: download of %d bytes from a buffer of %d", n, src.bytes)
	}
	if n == 0 {
		return nil
	}
	return src.r.rtCheck("cudaMemcpy(device to host)", src.r.rt.memcpyToHost(unsafe.Pointer(&dst[0]), src.ptr, uintptr(n), 2))
}
