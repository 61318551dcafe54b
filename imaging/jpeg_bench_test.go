package imaging

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDecodeJPEG decodes libjxl-testdata's 2268x1512 flower (3.4 Mpx)
// with DecodeImage: baseline 4:2:0 and 4:4:4 through Go's image/jpeg, and
// the asymmetric sampling Go refuses through libjpeg-turbo; "turbo-420"
// decodes the 4:2:0 file with libjpeg-turbo too, for the comparison of
// the two decoders on one file.
func BenchmarkDecodeJPEG(b *testing.B) {
	dir := filepath.Join(libjxlTestdata, "jxl", "flower")
	for _, c := range []struct{ name, file string }{
		{"go-420", "flower.png.im_q85_420.jpg"},
		{"go-444", "flower.png.im_q85_444.jpg"},
		{"turbo-asymmetric", "flower.png.im_q85_asymmetric.jpg"},
		{"turbo-420", "flower.png.im_q85_420.jpg"},
	} {
		raw, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			b.Skipf("%v (Debian's libjxl-testdata)", err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				var err error
				if c.name == "turbo-420" {
					_, err = decodeJPEGTurbo(context.Background(), raw, MaxImagePixels)
				} else {
					_, _, err = DecodeImage(bytes.NewReader(raw), MaxImagePixels)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
