package serve

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/bicyc/bicyc/infer"
)

// Memory model of bicyc-infer, behind the ceilings its help documents.
const (
	// MemoryBase is the Go memory of the process apart from images: the
	// runtime, the model's classes and buffers, HTTP connections (about
	// 60 MiB measured with a small model), with room to spare.
	MemoryBase = 128 << 20
	// BytesPerPixel is the most memory one image takes per pixel between
	// decoding and its reduction to the model's input: 8 bytes decoded
	// (16-bit RGBA) and 8 for preprocessing's opaque 16-bit copy. A JPEG,
	// at most 4 bytes decoded, is read whole before decoding (imaging's scan
	// budget): its encoded bytes, at most 8 per pixel
	// (imaging.MaxImageBytes), fit beside it.
	BytesPerPixel = 16
)

// MemoryCeiling is the memory ceiling of a server with c's limits:
//
//	MemoryBase + MaxBuffered
//	  + MaxConcurrent x (BytesPerPixel x MaxPixels + (DecodedBodies + BatchBodies) x MaxBody)
//
// bodies in memory, and per slot one image being decoded, the tensors of
// one request decoded from its body, and that request's batch
// (BatchMemory: its answers and one run of at most infer.RunBatch images). It
// counts the Go memory and ONNX Runtime's for a run of infer.RunBatch images of
// a small model (measured: TestServeMemoryCeiling); models opened in a
// repository add their ONNX Runtime memory on top, about the size of their
// files each, and a large model's run of infer.RunBatch images its activations.
func (c *Config) MemoryCeiling() int64 {
	return MemoryBase + c.MaxBuffered + int64(c.MaxConcurrent)*(BytesPerPixel*c.MaxPixels+DecodedBodies*c.MaxBody+c.BatchMemory())
}

// What a request takes in its slot beside its decoded image.
const (
	// DecodedBodies bounds the memory of the tensors the protocol's
	// transport decodes from a body once the request has a slot, per byte
	// of body: a JSON tensor's raw data copied out of the body, and its
	// values parsed (four bytes per value of two bytes of JSON, "0,").
	DecodedBodies = 3
	// BatchBodies is the memory one request's batch may take, per byte of
	// MaxBody (BatchMemory): a body holds a bounded number of images, and
	// each image's answer a bounded number of bytes per class.
	BatchBodies = 4
	// resultBytes and classBytes are the memory of one image's answer from
	// its run to the response (infer.Result, the output tensors, their
	// JSON text), per image and per class: at 1000 classes the answers
	// allocate about 101 bytes per image and class in all, garbage
	// included (TestBatchBytesEstimate).
	resultBytes = 256
	classBytes  = 128
	// largeBatchBytes is the body size from which a request's memory is
	// handed back to the operating system soon after it is answered
	// (returnMemory).
	largeBatchBytes = 1 << 20
)

// BatchMemory is the memory one request's batch may take in its slot:
// BatchBodies x MaxBody. A request whose batch needs more (batchBytes) is
// refused with 413 naming the limit.
func (c *Config) BatchMemory() int64 { return BatchBodies * c.MaxBody }

// batchBytes estimates the memory of a batch of n images of a model with
// classes classes and inputValues values per image, from its run to its
// response: every image's answer, and one run's inputs (as prepared, as
// stacked for ONNX Runtime, a mirror for the test-time flip, and ONNX
// Runtime's copy).
func batchBytes(n, classes, inputValues int64) int64 {
	return n*(resultBytes+classes*classBytes) + min(n, infer.RunBatch)*inputValues*4*4
}

// errBatchTooLarge: a request's batch needs more memory than one request
// may take; the server answers 413.
var errBatchTooLarge = errors.New("batch too large")

// admitBatch refuses a batch of n images on m whose estimated memory
// (batchBytes) is over the server's limit per request, naming the limit.
func (s *Server) admitBatch(n int64, m model) error {
	shape := m.InputShape()
	classes, values := int64(len(m.Classes())), int64(shape[0]*shape[1]*shape[2])
	need, limit := batchBytes(n, classes, values), s.cfg.BatchMemory()
	if need <= limit {
		return nil
	}
	most := (limit - batchBytes(infer.RunBatch, classes, values) + infer.RunBatch*(resultBytes+classes*classBytes)) / (resultBytes + classes*classBytes)
	return &oipError{http.StatusRequestEntityTooLarge, fmt.Errorf(
		"%w: %d images of %d classes need about %d MiB for their answers, more than the limit of %d MiB per request (%d x the largest body): send at most %d images per request",
		errBatchTooLarge, n, classes, need>>20, limit>>20, BatchBodies, max(most, 0))}
}

// returnScheduled is set while a hand-back of memory is scheduled.
var returnScheduled atomic.Bool

// returnDelay is how long after a large request its memory is handed
// back: the requests of a burst share one hand-back per delay.
const returnDelay = 500 * time.Millisecond

// returnMemory schedules, after a request whose body was at least
// largeBatchBytes, a hand-back of free memory to the operating system
// returnDelay later, unless one is scheduled already: without it the heap
// a burst grew stays resident until the collector's pacing returns it
// (minutes for an idle server). A hand-back collects the whole heap, so a
// sustained stream of large requests gets one per returnDelay, not one
// each.
func returnMemory(body int) {
	if body >= largeBatchBytes && returnScheduled.CompareAndSwap(false, true) {
		time.AfterFunc(returnDelay, func() {
			returnScheduled.Store(false)
			debug.FreeOSMemory()
		})
	}
}
