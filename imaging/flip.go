package imaging

import "fmt"

// FlipHorizontal writes the left-right mirror of the CHW image src
// (c x h x w) to dst: dst[ch][y][x] = src[ch][y][w-1-x]. dst may be src (an
// in-place flip) but must not partially overlap it. It panics if a slice is
// shorter than c*h*w. Stored images are uint8; a preprocessed one (the
// test-time flip of infer) is float32.
func FlipHorizontal[T uint8 | float32](src, dst []T, c, h, w int) {
	checkCHW("FlipHorizontal", src, dst, c, h, w)
	inPlace := c*h*w > 0 && &src[0] == &dst[0]
	for r := range c * h {
		s, d := src[r*w:(r+1)*w], dst[r*w:(r+1)*w]
		if inPlace {
			for i, j := 0, w-1; i < j; i, j = i+1, j-1 {
				d[i], d[j] = d[j], d[i]
			}
			continue
		}
		for x := range d {
			d[x] = s[w-1-x]
		}
	}
}

// checkCHW panics unless src and dst hold a c x h x w image.
func checkCHW[T uint8 | float32](fn string, src, dst []T, c, h, w int) {
	if c < 0 || h < 0 || w < 0 || len(src) < c*h*w || len(dst) < c*h*w {
		panic(fmt.Sprintf("imaging: %s: image %dx%dx%d needs %d values, src has %d, dst %d", fn, c, h, w, c*h*w, len(src), len(dst)))
	}
}
