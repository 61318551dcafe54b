//go:build cgo && !nojpegturbo

package imaging

/*
#cgo LDFLAGS: -ljpeg
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>

// An error manager that returns to the caller instead of exiting, and
// treats warnings (corrupt or missing data, which libjpeg would fill with
// grey) as errors, as Go's decoder does.
struct bicyc_jpeg_error {
	struct jpeg_error_mgr pub;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

static void bicyc_jpeg_fail(j_common_ptr c) {
	struct bicyc_jpeg_error *e = (struct bicyc_jpeg_error *)c->err;
	(*c->err->format_message)(c, e->msg);
	longjmp(e->jump, 1);
}

static void bicyc_jpeg_emit(j_common_ptr c, int level) {
	if (level < 0) {
		bicyc_jpeg_fail(c);
	}
}

// A progress monitor that stops a decode once *stop is set (from Go, when
// the caller's context is done) or the decoder has read more than
// max_scans scans; libjpeg calls it every few rows of blocks.
struct bicyc_jpeg_progress {
	struct jpeg_progress_mgr pub;
	volatile int *stop;
	int max_scans;
};

static void bicyc_jpeg_monitor(j_common_ptr c) {
	struct bicyc_jpeg_progress *p = (struct bicyc_jpeg_progress *)c->progress;
	struct bicyc_jpeg_error *e = (struct bicyc_jpeg_error *)c->err;
	j_decompress_ptr d = (j_decompress_ptr)c;
	if (*p->stop) {
		snprintf(e->msg, JMSG_LENGTH_MAX, "stopped");
		longjmp(e->jump, 1);
	}
	if (d->input_scan_number > p->max_scans) {
		snprintf(e->msg, JMSG_LENGTH_MAX, "more than %d scans", p->max_scans);
		longjmp(e->jump, 1);
	}
}

// bicyc_jpeg_decode reads the header of the JPEG in buf and, when out is
// not NULL, decodes it into out: width*height bytes (one component) or
// width*height*4 (RGBA, alpha 255), stopping as bicyc_jpeg_monitor says.
// It returns 0, or -1 with msg set.
static int bicyc_jpeg_decode(const unsigned char *buf, unsigned long len, unsigned char *out,
		int *width, int *height, int *components, volatile int *stop, int max_scans, char *msg) {
	struct jpeg_decompress_struct d;
	struct bicyc_jpeg_error e;
	struct bicyc_jpeg_progress p;
	d.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = bicyc_jpeg_fail;
	e.pub.emit_message = bicyc_jpeg_emit;
	e.msg[0] = 0;
	if (setjmp(e.jump)) {
		strncpy(msg, e.msg, JMSG_LENGTH_MAX);
		jpeg_destroy_decompress(&d);
		return -1;
	}
	jpeg_create_decompress(&d);
	p.pub.progress_monitor = bicyc_jpeg_monitor;
	p.stop = stop;
	p.max_scans = max_scans;
	d.progress = &p.pub;
	jpeg_mem_src(&d, buf, len);
	jpeg_read_header(&d, TRUE);
	*width = d.image_width;
	*height = d.image_height;
	*components = d.num_components;
	if (out == NULL) {
		jpeg_destroy_decompress(&d);
		return 0;
	}
	if (d.num_components == 1) {
		d.out_color_space = JCS_GRAYSCALE;
	} else if (d.num_components == 3) {
		d.out_color_space = JCS_EXT_RGBA;
	} else {
		snprintf(msg, JMSG_LENGTH_MAX, "%d color components", d.num_components);
		jpeg_destroy_decompress(&d);
		return -1;
	}
	jpeg_start_decompress(&d);
	size_t stride = (size_t)d.output_width * d.output_components;
	while (d.output_scanline < d.output_height) {
		JSAMPROW row = out + (size_t)d.output_scanline * stride;
		jpeg_read_scanlines(&d, &row, 1);
	}
	jpeg_finish_decompress(&d);
	jpeg_destroy_decompress(&d);
	return 0;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"image"
	"sync/atomic"
	"unsafe"
)

// jpegTurbo is the libjpeg-turbo decoder (Debian's libjpeg62-turbo,
// linked through cgo), for the JPEGs Go's image/jpeg refuses as
// unsupported: sampling factors other than its few fixed ratios (each
// component's own horizontal and vertical factors, as 4:1:1 with a
// subsampled luma or a subsampled blue channel of an RGB JPEG). It decodes
// with libjpeg's defaults (integer IDCT, smooth "fancy" chroma upsampling,
// as Pillow and browsers using libjpeg do).
const jpegTurbo = "libjpeg-turbo"

// decodeJPEGTurbo decodes a whole JPEG with libjpeg-turbo into *image.Gray
// (one component) or *image.RGBA (three: YCbCr or RGB), refusing one of
// more than maxPixels pixels before decoding it, and stopping when ctx is
// done or the decoder reads more than MaxJPEGScans scans (the scans were
// counted before; libjpeg's own count guards the same budget). Errors are
// libjpeg's messages.
func decodeJPEGTurbo(ctx context.Context, b []byte, maxPixels int64) (image.Image, error) {
	if len(b) == 0 {
		return nil, errors.New("empty data")
	}
	var w, h, comps C.int
	msg := (*C.char)(C.malloc(C.JMSG_LENGTH_MAX))
	defer C.free(unsafe.Pointer(msg))
	// The stop flag is Go memory, which libjpeg reads only during the
	// calls below (cgo's pointer rules) while Go may set it.
	stop := new(int32)
	defer context.AfterFunc(ctx, func() { atomic.StoreInt32(stop, 1) })()
	if ctx.Err() != nil {
		// AfterFunc would set it, but from a goroutine of its own.
		atomic.StoreInt32(stop, 1)
	}
	cstop := (*C.int)(unsafe.Pointer(stop))
	src := (*C.uchar)(unsafe.Pointer(&b[0]))
	decode := func(out *C.uchar) error {
		if C.bicyc_jpeg_decode(src, C.ulong(len(b)), out, &w, &h, &comps, cstop, MaxJPEGScans, msg) != 0 {
			return errors.New(C.GoString(msg))
		}
		return nil
	}
	if err := decode(nil); err != nil {
		return nil, err
	}
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("header declares an empty %dx%d image", w, h)
	}
	if px := int64(w) * int64(h); px > maxPixels {
		return nil, fmt.Errorf("header declares %dx%d = %d pixels, more than the limit of %d: %w", w, h, px, maxPixels, ErrTooLarge)
	}
	rect := image.Rect(0, 0, int(w), int(h))
	var img image.Image
	var pix []byte
	switch comps {
	case 1:
		g := image.NewGray(rect)
		img, pix = g, g.Pix
	case 3:
		rgba := image.NewRGBA(rect)
		img, pix = rgba, rgba.Pix
	default:
		return nil, fmt.Errorf("%d color components (want 1 or 3)", comps)
	}
	if err := decode((*C.uchar)(unsafe.Pointer(&pix[0]))); err != nil {
		return nil, err
	}
	return img, nil
}
