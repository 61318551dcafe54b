package data

import (
	"bytes"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/internal/imagetest"
)

func TestLoadImageFolders(t *testing.T) {
	root := t.TempDir()
	p := imaging.Preprocess{Channels: 3, Height: 16, Width: 16}
	// Class folders sort as cat < dog < zebra; files of dog are PNG, of cat
	// JPEG in a nested folder, of zebra mixed. Other files are ignored.
	files := map[string]image.Image{
		"train/dog/b.png":          imagetest.Gradient(16, 16, 1),
		"train/dog/a.PNG":          imagetest.Gradient(16, 16, 2),
		"train/cat/sub/c.jpg":      imagetest.Gradient(16, 16, 3),
		"train/zebra/z.jpeg":       imagetest.Gradient(32, 24, 4),
		"train/zebra/y.png":        imagetest.Gradient(16, 16, 5),
		"test/cat/t.png":           imagetest.Gradient(16, 16, 6),
		"test/dog/t.jpg":           imagetest.Gradient(8, 8, 7),
		"test/zebra/t.png":         imagetest.Gradient(16, 16, 8),
		"train/dog/.hidden/x.png":  imagetest.Gradient(16, 16, 9),
		"train/.cache/x/x.png":     imagetest.Gradient(16, 16, 10),
		"test/zebra/.thumb.png":    imagetest.Gradient(16, 16, 11),
		"train/cat/sub/ignore.txt": nil,
	}
	for name, img := range files {
		path := filepath.Join(root, name)
		switch {
		case img == nil:
			writeFile(t, path, []byte("not an image"))
		case strings.HasSuffix(name, "g") && strings.Contains(strings.ToLower(name), ".jp"):
			imagetest.WriteJPEG(t, path, img)
		default:
			imagetest.WritePNG(t, path, img)
		}
	}
	train, test, err := LoadImageFolders(filepath.Join(root, "train"), filepath.Join(root, "test"), p)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cat", "dog", "zebra"}; !slices.Equal(train.ClassNames, want) || !slices.Equal(test.ClassNames, want) {
		t.Fatalf("classes %q / %q", train.ClassNames, test.ClassNames)
	}
	wantFiles := []string{"train/cat/sub/c.jpg", "train/dog/a.PNG", "train/dog/b.png", "train/zebra/y.png", "train/zebra/z.jpeg"}
	if !slices.Equal(train.Labels, []int{0, 1, 1, 2, 2}) || !slices.Equal(test.Labels, []int{0, 1, 2}) {
		t.Fatalf("labels %v / %v", train.Labels, test.Labels)
	}
	if train.Name != "train" || train.Channels != 3 || train.Height != 16 || train.Width != 16 {
		t.Fatalf("train %q %dx%dx%d", train.Name, train.Channels, train.Height, train.Width)
	}
	// Each image equals Preprocess.Pixels of the decoded file: training and
	// inference share the conversion.
	for i, name := range wantFiles {
		img, err := imaging.DecodeImageFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(train.Image(i), p.Pixels(img)) {
			t.Errorf("image %d (%s) differs from Preprocess.Pixels of the file", i, name)
		}
	}
	// A PNG of the right size is stored exactly.
	src := imagetest.Gradient(16, 16, 2)
	got := train.Image(1)
	if got[0] != src.Pix[0] || got[256+17] != src.Pix[4*17+1] || got[512+255] != src.Pix[4*255+2] {
		t.Errorf("PNG pixels changed: %v", got[:4])
	}
}

func TestLoadImageFolderGray(t *testing.T) {
	root := t.TempDir()
	img := image.NewGray(image.Rect(0, 0, 4, 3))
	for i := range img.Pix {
		img.Pix[i] = uint8(20 * i)
	}
	imagetest.WritePNG(t, filepath.Join(root, "only", "g.png"), img)
	ds, err := LoadImageFolder(root, imaging.Preprocess{Channels: 1, Height: 3, Width: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ds.Pixels, img.Pix) || ds.Source != root {
		t.Fatalf("pixels %v, want %v", ds.Pixels, img.Pix)
	}
}

func TestLoadImageFolderBadInput(t *testing.T) {
	p := imaging.Preprocess{Channels: 3, Height: 8, Width: 8}
	good := func(t *testing.T, path string) { imagetest.WritePNG(t, path, imagetest.Gradient(8, 8, 1)) }
	cases := []struct {
		name  string
		setup func(t *testing.T, root string)
		p     imaging.Preprocess
		want  error
		msg   string
	}{
		{"missing root", func(t *testing.T, root string) { os.Remove(root) }, p, fs.ErrNotExist, ""},
		{"no class folders", func(t *testing.T, root string) { writeFile(t, filepath.Join(root, "x.png"), nil) }, p, ErrEmptyClass, "no class sub-folders"},
		{"empty class", func(t *testing.T, root string) {
			good(t, filepath.Join(root, "a", "1.png"))
			os.Mkdir(filepath.Join(root, "b"), 0o755)
		}, p, ErrEmptyClass, "/b"},
		{"class of non-images", func(t *testing.T, root string) {
			good(t, filepath.Join(root, "a", "1.png"))
			os.Mkdir(filepath.Join(root, "b"), 0o755)
			writeFile(t, filepath.Join(root, "b", "readme.txt"), []byte("x"))
		}, p, ErrEmptyClass, "/b"},
		{"corrupt png", func(t *testing.T, root string) {
			good(t, filepath.Join(root, "a", "1.png"))
			writeFile(t, filepath.Join(root, "a", "2.png"), []byte("\x89PNG\r\n\x1a\nbroken"))
		}, p, imaging.ErrFormat, "2.png"},
		{"truncated jpeg", func(t *testing.T, root string) {
			good(t, filepath.Join(root, "a", "1.png"))
			path := filepath.Join(root, "a", "2.jpg")
			imagetest.WriteJPEG(t, path, imagetest.Gradient(64, 64, 2))
			raw, _ := os.ReadFile(path)
			writeFile(t, path, raw[:len(raw)/2])
		}, p, imaging.ErrFormat, "2.jpg"},
		{"text named png", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, "a"), 0o755)
			writeFile(t, filepath.Join(root, "a", ".hidden.png"), nil)
			writeFile(t, filepath.Join(root, "a", "x.png"), []byte("hello"))
		}, p, imaging.ErrFormat, "x.png"},
		{"huge png header", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, "a"), 0o755)
			writeFile(t, filepath.Join(root, "a", "big.png"), hugePNGHeader())
		}, p, imaging.ErrFormat, "declares 100000x100000"},
		{"invalid preprocess", func(t *testing.T, root string) { good(t, filepath.Join(root, "a", "1.png")) }, imaging.Preprocess{Channels: 2, Height: 8, Width: 8}, imaging.ErrPreprocess, "channels 2"},
	}
	for i, c := range cases {
		root := filepath.Join(t.TempDir(), "root")
		os.Mkdir(root, 0o755)
		c.setup(t, root)
		_, err := LoadImageFolder(root, c.p)
		t.Logf("case %d (%s): %v", i, c.name, err)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), root) {
			t.Errorf("case %d (%s): got %v, want %v mentioning %q and the folder", i, c.name, err, c.want, c.msg)
		}
	}
}

// hugePNGHeader returns the signature and IHDR chunk of a PNG that declares
// 100000 x 100000 RGBA pixels (40 GB), followed by nothing.
func hugePNGHeader() []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 1, 1)))
	raw := b.Bytes()
	// IHDR data starts after the 8-byte signature, 4-byte length and
	// 4-byte type: width and height are big-endian uint32s.
	for _, off := range []int{16, 20} {
		raw[off], raw[off+1], raw[off+2], raw[off+3] = 0, 1, 0x86, 0xa0
	}
	// Recompute the IHDR CRC over type and data (bytes 12..29).
	crc := crc32.ChecksumIEEE(raw[12:29])
	raw[29], raw[30], raw[31], raw[32] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return raw[:33]
}

func TestLoadImageFoldersClassMismatch(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"train/a/1.png", "train/b/1.png", "test/a/1.png", "test/c/1.png"} {
		imagetest.WritePNG(t, filepath.Join(root, name), imagetest.Gradient(4, 4, 0))
	}
	_, _, err := LoadImageFolders(filepath.Join(root, "train"), filepath.Join(root, "test"), imaging.Preprocess{Channels: 3, Height: 4, Width: 4})
	if !errors.Is(err, ErrClassMismatch) || !strings.Contains(err.Error(), `only in train ["b"], only in test ["c"]`) {
		t.Fatalf("got %v", err)
	}
}
