package infer

import (
	"image"
	"os"
	"runtime/debug"
)

// largeImagePixels is the size (1 Mpx, 8 to 16 MiB decoded) from which a
// decoded image's memory is handed back as soon as the image is reduced
// (ReleaseImage).
const largeImagePixels = 1 << 20

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
// 256 MiB). DecodePrepare calls it.
func ReleaseImage(bounds image.Rectangle) {
	if int64(bounds.Dx())*int64(bounds.Dy()) >= largeImagePixels {
		debug.FreeOSMemory()
	}
}
