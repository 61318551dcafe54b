package serve

import (
	"image"
	"os"
	"runtime/debug"
)

// Memory model of bicyc-infer, behind the ceilings its help documents.
const (
	// MemoryBase is the Go memory of the process apart from images: the
	// runtime, the model's classes and buffers, HTTP connections (about
	// 60 MiB measured with a small model), with room to spare.
	MemoryBase = 128 << 20
	// BytesPerPixel is the most memory one image takes per pixel between
	// decoding and its reduction to the model's input: 8 bytes decoded
	// (16-bit RGBA) and 8 for preprocessing's opaque 16-bit copy.
	BytesPerPixel = 16
	// largeImagePixels is the size (1 Mpx, 8 to 16 MiB decoded) from
	// which a decoded image's memory is handed back as soon as the image
	// is reduced (ReleaseImage).
	largeImagePixels = 1 << 20
)

// MemoryCeiling is the Go memory ceiling of a server with c's limits:
//
//	MemoryBase + MaxBuffered + MaxConcurrent x BytesPerPixel x MaxPixels
//
// (bodies in memory, and one image being decoded per slot). Models opened
// in a repository add their ONNX Runtime memory on top, about the size of
// their files each.
func (c *Config) MemoryCeiling() int64 {
	return MemoryBase + c.MaxBuffered + int64(c.MaxConcurrent)*BytesPerPixel*c.MaxPixels
}

// LimitMemory sets the Go runtime's soft memory limit to ceiling bytes,
// unless GOMEMLIMIT sets one: the garbage collector then runs before the
// heap grows past the ceiling, instead of letting garbage double it.
// Memory that ONNX Runtime allocates itself comes on top, about the size
// of the model files.
func LimitMemory(ceiling int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(ceiling)
	}
}

// ReleaseImage runs the garbage collector and returns free memory to the
// operating system at once if the image just reduced to the model's input
// had bounds of at least 1 Mpx; the caller must hold no reference to it
// any more. Otherwise the collector, which runs only once the heap has
// grown, lets the next large image be decoded beside the garbage of the
// last: a folder of 4096x4096 16-bit images peaked at 445-583 MiB resident
// that way, and at 317 MiB with this (the live memory of one such image is
// 256 MiB).
func ReleaseImage(bounds image.Rectangle) {
	if int64(bounds.Dx())*int64(bounds.Dy()) >= largeImagePixels {
		debug.FreeOSMemory()
	}
}
