package data

import (
	"bufio"
	"errors"
	"image"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/internal/imagetest"
)

// TestTorchvisionGeometry checks ShorterSideSize, CenterCropWindow and the
// fallback of ResizedCrop.Window against the values torchvision 0.14
// computes (testdata/torchvision/gen.py wrote geometry.txt), including
// CenterCrop's rounding of half offsets to even.
func TestTorchvisionGeometry(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "torchvision", "geometry.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	counts := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		n := make([]float64, len(fields)-1)
		for i, s := range fields[1:] {
			if n[i], err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
		}
		in := func(i int) int { return int(n[i]) }
		counts[fields[0]]++
		switch fields[0] {
		case "resize":
			if w, h := imaging.ShorterSideSize(in(0), in(1), in(2)); w != in(3) || h != in(4) {
				t.Errorf("line %d: Resize(%d) of %dx%d: got %dx%d, torchvision %dx%d", line, in(2), in(0), in(1), w, h, in(3), in(4))
			}
		case "center":
			want := image.Rect(in(4), in(5), in(4)+in(2), in(5)+in(3))
			if got := imaging.CenterCropWindow(in(0), in(1), in(2), in(3)); got != want {
				t.Errorf("line %d: CenterCrop %dx%d of %dx%d: got %v, torchvision %v", line, in(2), in(3), in(0), in(1), got, want)
			}
		case "fallback":
			r := ResizedCrop{Scale: [2]float64{2, 3}, Ratio: [2]float64{n[2], n[3]}}
			want := image.Rect(in(4), in(5), in(4)+in(6), in(5)+in(7))
			if got := r.Window(rand.New(rand.NewPCG(1, 2)), in(0), in(1)); got != want {
				t.Errorf("line %d: fallback window of %dx%d, ratio %v: got %v, torchvision %v", line, in(0), in(1), r.Ratio, got, want)
			}
		default:
			t.Fatalf("line %d: unknown case %q", line, fields[0])
		}
	}
	if counts["resize"] < 50 || counts["center"] < 30 || counts["fallback"] < 20 {
		t.Fatalf("geometry.txt has too few cases: %v", counts)
	}
}

// TestResizedCropWindow draws many windows: every one lies inside the
// image, has an area fraction within Scale and an aspect ratio within
// Ratio (up to the rounding of its sides) unless it is the fallback, and
// the same seed draws the same windows.
func TestResizedCropWindow(t *testing.T) {
	r := DefaultResizedCrop()
	for _, size := range []image.Point{{341, 256}, {56, 72}, {28, 28}, {300, 40}} {
		rng := rand.New(rand.NewPCG(7, uint64(size.X)))
		again := rand.New(rand.NewPCG(7, uint64(size.X)))
		var fractions float64
		for i := range 2000 {
			win := r.Window(rng, size.X, size.Y)
			if win != r.Window(again, size.X, size.Y) {
				t.Fatalf("%v draw %d: same seed, different windows", size, i)
			}
			if !win.In(image.Rect(0, 0, size.X, size.Y)) || win.Empty() {
				t.Fatalf("%v draw %d: window %v outside the image", size, i, win)
			}
			w, h := float64(win.Dx()), float64(win.Dy())
			frac := w * h / float64(size.X*size.Y)
			fractions += frac
			slack := 1 + 2/min(w, h) // rounding each side by up to half a pixel
			if frac > r.Scale[1]*slack*slack || frac < r.Scale[0]/(slack*slack) {
				t.Fatalf("%v draw %d: window %v has area fraction %.3f outside %v", size, i, win, frac, r.Scale)
			}
			if a := w / h; (a > r.Ratio[1]*slack || a < r.Ratio[0]/slack) && win != r.fallback(size.X, size.Y) {
				t.Fatalf("%v draw %d: window %v has aspect %.3f outside %v", size, i, win, a, r.Ratio)
			}
		}
		// Uniform area in [0.08, 1] means 0.54; rejected large windows pull
		// it down a little on photo-shaped images (a 7.5:1 strip mostly
		// falls back to its 4:3 centre).
		if mean := fractions / 2000; size.X < 4*size.Y && (mean < 0.35 || mean > 0.6) {
			t.Errorf("%v: mean area fraction %.3f, want near 0.5", size, mean)
		}
	}
}

// TestResizedCropApply: a window of the output size is copied exactly, any
// other is resized with Catmull-Rom (a constant image stays constant), and
// one channel works as three.
func TestResizedCropApply(t *testing.T) {
	flat := slices.Repeat([]uint8{90}, 3*40*30)
	dst := make([]uint8, 3*16*16)
	rng := rand.New(rand.NewPCG(1, 1))
	r := DefaultResizedCrop()
	for range 50 {
		r.Apply(rng, flat, 3, 30, 40, dst, 16, 16)
		if slices.Min(dst) != 90 || slices.Max(dst) != 90 {
			t.Fatalf("constant image cropped to values %d..%d", slices.Min(dst), slices.Max(dst))
		}
	}
	// Scale fixed to the whole 16x16 area and ratio 1: the crop is the image.
	whole := ResizedCrop{Scale: [2]float64{1, 1}, Ratio: [2]float64{1, 1}}
	src := make([]uint8, 16*16)
	for i := range src {
		src[i] = uint8(i * 7)
	}
	gray := make([]uint8, 16*16)
	whole.Apply(rng, src, 1, 16, 16, gray, 16, 16)
	if !slices.Equal(gray, src) {
		t.Error("a full-size window was not copied exactly")
	}
}

// TestLoadPhotoFolders writes JPEG and PNG photos of varied sizes: the
// dataset images are the test-time center crops (exactly p.Pixels of the
// decoded file) and Photos keeps each at load resolution, the longer side
// capped at MaxPhotoAspect times the load side.
func TestLoadPhotoFolders(t *testing.T) {
	root := t.TempDir()
	sizes := map[string]image.Point{
		"train/bird/a.jpg": {40, 30}, "train/bird/b.png": {56, 72}, "train/cat/c.png": {200, 20},
		"train/cat/d.jpg": {30, 30}, "test/bird/e.png": {72, 56}, "test/cat/f.jpg": {33, 44},
	}
	for name, size := range sizes {
		img := imagetest.Gradient(size.X, size.Y, len(name))
		if strings.HasSuffix(name, ".png") {
			imagetest.WritePNG(t, filepath.Join(root, name), img)
		} else {
			imagetest.WriteJPEG(t, filepath.Join(root, name), img)
		}
	}
	p := imaging.Preprocess{Channels: 3, Height: 24, Width: 24, ResizeMode: arch.CenterCrop, ResizeShorter: 27}
	train, test, err := LoadPhotoFolders(filepath.Join(root, "train"), filepath.Join(root, "test"), p, 32)
	if err != nil {
		t.Fatal(err)
	}
	if test.Photos != nil || train.Photos == nil || train.Photos.Len() != 4 {
		t.Fatalf("photos: train %v, test %v", train.Photos, test.Photos)
	}
	wantSizes := []image.Point{{42, 32}, {32, 41}, {64, 32}, {32, 32}} // a, b, c (capped from 320), d
	var bytes int64
	for i, name := range []string{"train/bird/a.jpg", "train/bird/b.png", "train/cat/c.png", "train/cat/d.jpg"} {
		img, err := imaging.DecodeImageFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(train.Image(i), p.Pixels(img)) {
			t.Errorf("%s: dataset image differs from the test-time preprocessing", name)
		}
		pix, w, h := train.Photos.Image(i)
		if (image.Point{w, h}) != wantSizes[i] || len(pix) != 3*w*h {
			t.Errorf("%s: photo %dx%d with %d values, want %v", name, w, h, len(pix), wantSizes[i])
		}
		want, _, _ := imaging.ResizeShorter(imaging.Composite(img, [3]uint8{}), 3, 32, MaxPhotoAspect*32)
		if !slices.Equal(pix, want) {
			t.Errorf("%s: photo pixels differ from imaging.ResizeShorter", name)
		}
		bytes += int64(len(pix))
	}
	if train.Photos.Bytes() != bytes {
		t.Errorf("Bytes() = %d, want %d", train.Photos.Bytes(), bytes)
	}
	// At the test-time resize size the views are cut from the photos: they
	// must still equal p.Pixels exactly.
	same, _, err := LoadPhotoFolders(filepath.Join(root, "train"), filepath.Join(root, "test"), p, p.ResizeShorter)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(same.Pixels, train.Pixels) {
		t.Error("with the load side at the resize size, the dataset images differ from the test-time preprocessing")
	}
	if _, _, err := LoadPhotoFolders(filepath.Join(root, "train"), filepath.Join(root, "test"), p, -1); !errors.Is(err, imaging.ErrPreprocess) {
		t.Errorf("negative load side: %v", err)
	}
	both, err := ConcatPhotos(train.Photos, train.Photos)
	if err != nil || both.Len() != 8 || both.Sizes[6] != wantSizes[2] {
		t.Errorf("ConcatPhotos: %v %v", both, err)
	}
	if _, err := ConcatPhotos(train.Photos, nil); err == nil {
		t.Error("ConcatPhotos of photos and none: no error")
	}
}

// TestBatcherResizedCrop: with a resized crop the Batcher cuts windows
// from the load-resolution photos, reproducibly per (seed, epoch), and a
// new epoch draws new windows.
func TestBatcherResizedCrop(t *testing.T) {
	ds := &Dataset{Name: "photos", Channels: 1, Height: 8, Width: 8, Pixels: make([]uint8, 3*64), Labels: []int{0, 1, 0}, ClassNames: []string{"a", "b"}}
	ds.Photos = &Photos{Channels: 1}
	for i := range 3 {
		w, h := 20+i*7, 16
		pix := make([]uint8, w*h)
		for j := range pix {
			pix[j] = uint8((j%w)*9 + i*40)
		}
		ds.Photos.Pixels = append(ds.Photos.Pixels, pix)
		ds.Photos.Sizes = append(ds.Photos.Sizes, image.Point{w, h})
	}
	p := imaging.Preprocess{Channels: 1, Height: 8, Width: 8, Mean: []float32{0}, Std: []float32{1}}
	opts := BatchOptions{BatchSize: 3, Seed: 3, Preprocess: p, Augment: Augment{ResizedCrop: DefaultResizedCrop(), HorizontalFlip: true}}
	epoch := func(b *Batcher, e int) []float32 {
		x, labels := make([]float32, 3*64), make([]int, 3)
		b.Epoch(e)
		if n, ok := b.Next(x, labels); n != 3 || !ok {
			t.Fatalf("epoch %d: batch of %d", e, n)
		}
		return x
	}
	a, b := NewBatcher(ds, nil, opts), NewBatcher(ds, nil, opts)
	e0, e1 := epoch(a, 0), epoch(a, 1)
	if !slices.Equal(e0, epoch(b, 0)) || !slices.Equal(e1, epoch(b, 1)) {
		t.Error("same seed and epoch gave different batches")
	}
	if slices.Equal(e0, e1) {
		t.Error("epochs 0 and 1 drew the same crops")
	}
	// The dataset's own images are all zero: any non-zero value came from
	// the photos.
	if slices.Max(e0) == 0 {
		t.Error("the batch did not come from the photos")
	}
	for i, v := range e0 {
		if v < 0 || v > 1 || math.IsNaN(float64(v)) {
			t.Fatalf("value %d = %v outside [0, 1]", i, v)
		}
	}
}

// fallback is the window Window returns when every attempt misses.
func (r ResizedCrop) fallback(w, h int) image.Rectangle {
	return ResizedCrop{Scale: [2]float64{2, 3}, Ratio: r.Ratio}.Window(rand.New(rand.NewPCG(0, 0)), w, h)
}
