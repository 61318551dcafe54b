//go:build !cgo || nojpegturbo

package imaging

import (
	"context"
	"errors"
	"image"
)

// jpegTurbo names the fallback JPEG decoder; without cgo, or built with
// -tags nojpegturbo (no libjpeg dependency), there is none.
const jpegTurbo = ""

// decodeJPEGTurbo is unavailable in this build: the JPEGs Go's image/jpeg
// refuses stay unsupported (ErrUnsupported).
func decodeJPEGTurbo(context.Context, []byte, int64) (image.Image, error) {
	return nil, errors.New("this build has no libjpeg-turbo (built without cgo)")
}
