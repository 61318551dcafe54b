package data

import (
	"fmt"
	"image"
)

// MaxPhotoAspect bounds the aspect ratio of a stored photo (see Photos): a
// longer side beyond MaxPhotoAspect times the shorter one is cropped to it,
// around the centre, so one panorama cannot take the memory of dozens of
// photos.
const MaxPhotoAspect = 2

// Photos holds images of varying sizes: the training images of an image
// folder kept at load resolution, which random-resized-crop augmentation
// (ResizedCrop) samples a new window from at every epoch. Image i is the
// uint8 CHW slice Pixels[i] of Channels x Sizes[i].Y x Sizes[i].X values.
//
// LoadPhotoFolders stores each image composited onto the background and
// resized (Catmull-Rom, aspect kept, not resampled when already that size)
// so that its shorter side is the load side L, its longer side cropped
// around the centre to at most MaxPhotoAspect*L. Memory is therefore
// Channels*L*L*aspect bytes per image, at most Channels*2*L*L: a 4:3 RGB
// photo at L = 256 takes 256 KiB, so the 5994 training images of CUB-200
// take about 1.5 GiB (Bytes reports the total). That is on top of the
// Dataset's own fixed-size test-time views (Channels*Height*Width each).
//
// A Photos is read-only once loaded and safe for concurrent reads.
type Photos struct {
	Channels int
	Pixels   [][]uint8
	Sizes    []image.Point // (width, height) of each image
}

// Len returns the number of images.
func (ph *Photos) Len() int { return len(ph.Pixels) }

// Image returns image i (uint8 CHW, a view, not a copy) and its width and
// height. It panics if i is out of range.
func (ph *Photos) Image(i int) (pix []uint8, w, h int) {
	return ph.Pixels[i], ph.Sizes[i].X, ph.Sizes[i].Y
}

// Bytes returns the memory the pixels take.
func (ph *Photos) Bytes() int64 {
	var n int64
	for _, p := range ph.Pixels {
		n += int64(len(p))
	}
	return n
}

// ConcatPhotos returns the images of a followed by those of b, sharing
// their pixels. Both nil gives nil; one nil, or different channel counts,
// is an error (a dataset whose images cannot all be cropped).
func ConcatPhotos(a, b *Photos) (*Photos, error) {
	switch {
	case a == nil && b == nil:
		return nil, nil
	case a == nil || b == nil:
		return nil, fmt.Errorf("data: cannot join a dataset with load-resolution photos and one without")
	case a.Channels != b.Channels:
		return nil, fmt.Errorf("data: cannot join photos of %d and %d channels", a.Channels, b.Channels)
	}
	return &Photos{
		Channels: a.Channels,
		Pixels:   append(append([][]uint8(nil), a.Pixels...), b.Pixels...),
		Sizes:    append(append([]image.Point(nil), a.Sizes...), b.Sizes...),
	}, nil
}
