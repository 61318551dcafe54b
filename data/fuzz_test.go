package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/imaging"
)

// The fuzz targets of this package cover every reader of outside bytes: IDX
// files (LoadIDX), CIFAR binary batches (LoadCIFAR10, LoadCIFAR100) and
// image files (DecodeImageFile, LoadImageFolder, Preprocess.Pixels and
// Image; package imaging fuzzes the EXIF orientation of JPEGs). Each compares the loader with a whole-in-memory reference of the
// documented format, so a wrong answer fails as surely as a panic.
// scripts/fuzz.sh runs them for a fixed time; interesting inputs live in
// testdata/fuzz.

// idxReference parses an IDX file of wantDims uint8 dimensions whole in
// memory, gunzipping it first if it starts with the gzip magic: the oracle
// that FuzzLoadIDX compares LoadIDX with.
func idxReference(b []byte, wantDims int) (dims []int, payload []byte, ok bool) {
	if bytes.HasPrefix(b, gzipMagic) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, nil, false
		}
		if b, err = io.ReadAll(zr); err != nil {
			return nil, nil, false
		}
	}
	head := 4 + 4*wantDims
	if len(b) < head || b[0] != 0 || b[1] != 0 || b[2] != idxTypeUint8 || int(b[3]) != wantDims {
		return nil, nil, false
	}
	n := 1
	for i := range wantDims {
		d := int(binary.BigEndian.Uint32(b[4+4*i:]))
		if d == 0 || d > len(b) {
			return nil, nil, false
		}
		dims = append(dims, d)
		if n *= d; n > len(b) {
			return nil, nil, false
		}
	}
	if len(b)-head != n {
		return nil, nil, false
	}
	return dims, b[head:], true
}

// FuzzLoadIDX writes an image and a label file from fuzzed bytes and loads
// them. Invariants: LoadIDX succeeds exactly when idxReference accepts both
// files with equal counts, and then returns the reference's pixels, labels,
// size and "class_%d" names; otherwise its error wraps ErrFormat and names
// a file.
func FuzzLoadIDX(f *testing.F) {
	_, test := loadFashionMNIST(f)
	pix := test.Pixels[:3*784]
	labels := make([]byte, 3)
	for i := range labels {
		labels[i] = byte(test.Labels[i])
	}
	images := idxBytes(idxTypeUint8, []uint32{3, 28, 28}, pix)
	labelFile := idxBytes(idxTypeUint8, []uint32{3}, labels)
	f.Add(images, labelFile)
	f.Add(gzipBytes(f, images), gzipBytes(f, labelFile))
	f.Add(idxBytes(idxTypeUint8, []uint32{2, 1, 3}, []byte{0, 1, 2, 3, 4, 5}), gzipBytes(f, idxBytes(idxTypeUint8, []uint32{2}, []byte{0, 9})))
	f.Add(idxBytes(idxTypeUint8, []uint32{1, 1, 1}, []byte{7}), idxBytes(idxTypeUint8, []uint32{2}, []byte{0, 1}))
	f.Add(idxBytes(0x0d, []uint32{1, 1, 1}, []byte{7, 0, 0, 0}), idxBytes(idxTypeUint8, []uint32{1}, []byte{1}))
	f.Add(idxBytes(idxTypeUint8, []uint32{0xffffffff, 0xffffffff, 0xffffffff}, nil), labelFile[:5])
	f.Add(append(gzipBytes(f, images), 0), append(labelFile, 0))
	// Inputs run one at a time per process, so they can share the files.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, images, labels []byte) {
		imagesPath, labelsPath := filepath.Join(dir, "images"), filepath.Join(dir, "labels")
		writeFile(t, imagesPath, images)
		writeFile(t, labelsPath, labels)
		ds, err := LoadIDX(imagesPath, labelsPath)

		dims, wantPix, okImages := idxReference(images, 3)
		labelDims, wantLabels, okLabels := idxReference(labels, 1)
		if !okImages || !okLabels || dims[0] != labelDims[0] {
			if err == nil {
				t.Fatalf("LoadIDX accepted files the reference rejects (images ok %v, labels ok %v)", okImages, okLabels)
			}
			if !errors.Is(err, imaging.ErrFormat) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not wrap ErrFormat or name the file", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("LoadIDX rejects valid files: %v", err)
		}
		if ds.Channels != 1 || ds.Height != dims[1] || ds.Width != dims[2] || !bytes.Equal(ds.Pixels, wantPix) {
			t.Fatalf("got %d images %dx%dx%d, want %v and the file's pixels", ds.Len(), ds.Channels, ds.Height, ds.Width, dims)
		}
		maxLabel := 0
		for i, l := range wantLabels {
			if ds.Labels[i] != int(l) {
				t.Fatalf("label %d is %d, want %d", i, ds.Labels[i], l)
			}
			maxLabel = max(maxLabel, int(l))
		}
		if len(ds.Labels) != len(wantLabels) || !slices.Equal(ds.ClassNames, numberedClassNames(maxLabel+1)) {
			t.Fatalf("%d labels and classes %q, want %d labels and class_0..class_%d", len(ds.Labels), ds.ClassNames, len(wantLabels), maxLabel)
		}
	})
}

// cifarReference checks CIFAR binary batches and class names as
// documented: every file a positive multiple of the record, every coarse
// label below coarse (when coarse > 0), every fine label below classes,
// and a names file, when present, of exactly classes non-empty lines.
func cifarReference(files [][]byte, names []byte, hasNames bool, labelBytes, coarse, classes int) bool {
	if hasNames {
		n := 0
		for _, line := range strings.Split(string(names), "\n") {
			if strings.TrimSpace(line) != "" {
				n++
			}
		}
		if n != classes {
			return false
		}
	}
	record := labelBytes + cifarImageBytes
	for _, b := range files {
		if len(b) == 0 || len(b)%record != 0 {
			return false
		}
		for off := 0; off < len(b); off += record {
			if (coarse > 0 && int(b[off]) >= coarse) || int(b[off+labelBytes-1]) >= classes {
				return false
			}
		}
	}
	return true
}

// checkCIFAR compares ds with the records of files, in order.
func checkCIFAR(t *testing.T, ds *Dataset, files [][]byte, labelBytes int) {
	t.Helper()
	record := labelBytes + cifarImageBytes
	var pix []byte
	var labels []int
	for _, b := range files {
		for off := 0; off < len(b); off += record {
			labels = append(labels, int(b[off+labelBytes-1]))
			pix = append(pix, b[off+labelBytes:off+record]...)
		}
	}
	if ds.Channels != 3 || ds.Height != 32 || ds.Width != 32 || !slices.Equal(ds.Labels, labels) || !bytes.Equal(ds.Pixels, pix) {
		t.Fatalf("%s: %d images %dx%dx%d, want %d 3x32x32 images with the records' labels and pixels",
			ds.Name, ds.Len(), ds.Channels, ds.Height, ds.Width, len(labels))
	}
}

// FuzzLoadCIFAR builds a CIFAR-10 folder (the fuzzed training batch as all
// five data_batch files) or a CIFAR-100 folder, with an optional class
// names file, and loads it. Invariants: the loader succeeds exactly when
// cifarReference accepts the files, and then returns their records in
// order; otherwise its error wraps ErrFormat or ErrLabelRange and names the
// file.
func FuzzLoadCIFAR(f *testing.F) {
	f.Add(cifarRecords([][]byte{{3}, {9}}), cifarRecords([][]byte{{0}}), []byte{}, false)
	f.Add(cifarRecords([][]byte{{19, 99}}), cifarRecords([][]byte{{0, 5}, {1, 6}}), []byte{}, true)
	f.Add(cifarRecords([][]byte{{10}}), cifarRecords([][]byte{{0}}), []byte("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"), false)
	f.Add(cifarRecords([][]byte{{20, 1}}), cifarRecords([][]byte{{0, 100}})[:100], []byte("only one name\n"), true)
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, train, test, names []byte, hundred bool) {
		var files []string
		dir := filepath.Join(root, cifar10DirName)
		load, labelBytes, coarse, classes, namesFile := LoadCIFAR10, 1, 0, cifar10Classes, cifar10NamesFile
		if hundred {
			dir = filepath.Join(root, cifar100DirName)
			load, labelBytes, coarse, classes, namesFile = LoadCIFAR100, 2, cifar100Coarse, cifar100Classes, "fine_label_names.txt"
			files = []string{"train.bin"}
		} else {
			for i := 1; i <= 5; i++ {
				files = append(files, fmt.Sprintf("data_batch_%d.bin", i))
			}
		}
		for _, name := range files {
			writeFile(t, filepath.Join(dir, name), train)
		}
		testFile := "test_batch.bin"
		if hundred {
			testFile = "test.bin"
		}
		writeFile(t, filepath.Join(dir, testFile), test)
		if namesPath := filepath.Join(dir, namesFile); len(names) > 0 {
			writeFile(t, namesPath, names)
		} else if err := os.Remove(namesPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		trainSet, testSet, err := load(dir)

		trainFiles := make([][]byte, len(files))
		for i := range trainFiles {
			trainFiles[i] = train
		}
		if !cifarReference(append(trainFiles, test), names, len(names) > 0, labelBytes, coarse, classes) {
			if err == nil {
				t.Fatal("loader accepted files the reference rejects")
			}
			if !(errors.Is(err, imaging.ErrFormat) || errors.Is(err, ErrLabelRange)) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q wraps neither ErrFormat nor ErrLabelRange or does not name the file", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("loader rejects valid files: %v", err)
		}
		checkCIFAR(t, trainSet, trainFiles, labelBytes)
		checkCIFAR(t, testSet, [][]byte{test}, labelBytes)
		if trainSet.NumClasses() != classes || testSet.NumClasses() != classes {
			t.Fatalf("%d and %d classes, want %d", trainSet.NumClasses(), testSet.NumClasses(), classes)
		}
	})
}

// imageSeeds returns small real image files of every registered format:
// files from Go's and golang.org/x/image's test data (PNG suite, GIF,
// baseline and progressive JPEG, BMP, TIFF, lossy and lossless WebP), and
// a Fashion-MNIST image as PNG and JPEG.
func imageSeeds(tb testing.TB, fashion *Dataset) [][]byte {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/image").Output()
	if err != nil {
		tb.Fatalf("go list golang.org/x/image: %v", err)
	}
	xImage := filepath.Join(strings.TrimSpace(string(out)), "testdata")
	goImage := filepath.Join(runtime.GOROOT(), "src", "image")
	paths := []string{
		filepath.Join(goImage, "testdata", "triangle-001.gif"),
		filepath.Join(goImage, "testdata", "video-001.q50.420.jpeg"),
		filepath.Join(goImage, "testdata", "video-005.gray.q50.2x2.progressive.jpeg"),
		filepath.Join(xImage, "bmp_1bpp.bmp"),
		filepath.Join(xImage, "bmp_4bpp.bmp"),
		filepath.Join(xImage, "yellow_rose-small-v5.bmp"),
		filepath.Join(xImage, "bw-packbits.tiff"),
		filepath.Join(xImage, "bw-gopher_ccittGroup3.tiff"),
		filepath.Join(xImage, "no_rps.tiff"),
		filepath.Join(xImage, "gopher-doc.1bpp.lossless.webp"),
		filepath.Join(xImage, "blue-purple-pink.lossy.webp"),
	}
	for _, name := range []string{"basn0g01", "basn2c16", "basn3p02", "basn4a16", "basn6a08"} {
		paths = append(paths, filepath.Join(goImage, "png", "testdata", "pngsuite", name+".png"))
	}
	// JPEGs Go refuses, decoded by libjpeg-turbo (package imaging's
	// testdata/sampling/make.sh).
	for _, name := range []string{"asymmetric", "luma-subsampled", "rgb-blue-subsampled"} {
		paths = append(paths, filepath.Join("..", "imaging", "testdata", "sampling", name+".jpg"))
	}
	var seeds [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	gray := &image.Gray{Pix: fashion.Image(0), Stride: 28, Rect: image.Rect(0, 0, 28, 28)}
	var pngBuf, jpegBuf bytes.Buffer
	if err := png.Encode(&pngBuf, gray); err != nil {
		tb.Fatal(err)
	}
	if err := jpeg.Encode(&jpegBuf, gray, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	return append(seeds, pngBuf.Bytes(), jpegBuf.Bytes())
}

// pixelsReference is steps 1 and 3 of Preprocess (alpha, channels) written
// directly from the documented formulas over img.At, for an image that
// needs no resize: the oracle for Pixels' fast paths.
func pixelsReference(p imaging.Preprocess, img image.Image) []uint8 {
	b := img.Bounds()
	plane := b.Dx() * b.Dy()
	out := make([]uint8, p.Channels*plane)
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			c := [3]uint32{r, g, bl}
			for k := range c {
				c[k] = min(c[k]+uint32(p.Background[k])*0x101*(0xffff-a)/0xffff, 0xffff)
			}
			if p.Channels == 1 {
				out[i] = uint8((19595*c[0] + 38470*c[1] + 7471*c[2] + 1<<15) >> 24)
			} else {
				for k := range c {
					out[k*plane+i] = uint8(c[k] >> 8)
				}
			}
			i++
		}
	}
	return out
}

// FuzzImageFolder writes fuzzed bytes as the only image of a one-class
// image folder and loads it with a fuzzed Preprocess (1 or 3 channels, a
// background, and either a small size or, with keepSize, the image's own
// size so no resize runs). Invariants:
//   - DecodeImageFile and LoadImageFolder agree on success; their errors
//     wrap ErrFormat and name the file;
//   - a decoded image is non-empty and within MaxImagePixels;
//   - the folder's pixels are exactly Pixels of the decoded image, which
//     has Channels*Height*Width values and, without a resize, equals
//     pixelsReference;
//   - Image is Normalize of Pixels, with finite values.
func FuzzImageFolder(f *testing.F) {
	_, test := loadFashionMNIST(f)
	for i, seed := range imageSeeds(f, test) {
		f.Add(seed, i%2 == 0, uint8(27), uint8(27), uint8(i*40), uint8(255), uint8(0), i%3 == 0)
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, file []byte, rgb bool, h, w, bg0, bg1, bg2 uint8, keepSize bool) {
		path := filepath.Join(root, "class", "image.png")
		writeFile(t, path, file)
		img, err := imaging.DecodeImageFile(path)
		if err != nil {
			if !errors.Is(err, imaging.ErrFormat) || !strings.Contains(err.Error(), path) {
				t.Fatalf("DecodeImageFile error %q does not wrap ErrFormat or name the file", err)
			}
			if _, ferr := LoadImageFolder(root, imaging.Preprocess{Channels: 1, Height: 1, Width: 1}); !errors.Is(ferr, imaging.ErrFormat) {
				t.Fatalf("LoadImageFolder error %v, want ErrFormat as DecodeImageFile (%v)", ferr, err)
			}
			return
		}
		b := img.Bounds()
		if b.Empty() || int64(b.Dx())*int64(b.Dy()) > imaging.MaxImagePixels {
			t.Fatalf("decoded image bounds %v", b)
		}
		p := imaging.Preprocess{Channels: 1, Height: 1 + int(h)%32, Width: 1 + int(w)%32, Background: [3]uint8{bg0, bg1, bg2},
			Mean: []float32{0.5}, Std: []float32{0.25}}
		if rgb {
			p.Channels, p.Mean, p.Std = 3, []float32{0.485, 0.456, 0.406}, []float32{0.229, 0.224, 0.225}
		}
		if keepSize && b.Dx() <= imaging.MaxSide && b.Dy() <= imaging.MaxSide {
			p.Height, p.Width = b.Dy(), b.Dx()
		}
		pix := p.Pixels(img)
		if len(pix) != p.ImageSize() {
			t.Fatalf("Pixels gave %d values, want %d", len(pix), p.ImageSize())
		}
		if b.Dx() == p.Width && b.Dy() == p.Height && !bytes.Equal(pix, pixelsReference(p, img)) {
			t.Fatalf("Pixels of a %T without resize differ from the documented formulas", img)
		}
		ds, err := LoadImageFolder(root, p)
		if err != nil {
			t.Fatalf("LoadImageFolder fails on an image DecodeImageFile reads: %v", err)
		}
		if ds.Len() != 1 || !bytes.Equal(ds.Image(0), pix) {
			t.Fatalf("image folder holds %d images that differ from Pixels", ds.Len())
		}
		x := p.Image(img)
		want := make([]float32, len(pix))
		p.Normalize(pix, want)
		if !slices.Equal(x, want) {
			t.Fatal("Image differs from Normalize(Pixels)")
		}
	})
}

// TestPixelsReferenceAgrees checks the fuzz oracle itself on colours whose
// results are known: an opaque and a half-transparent pixel.
func TestPixelsReferenceAgrees(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.SetNRGBA(0, 0, color.NRGBA{10, 20, 30, 255})
	img.SetNRGBA(1, 0, color.NRGBA{200, 100, 0, 128})
	p := imaging.Preprocess{Channels: 3, Height: 1, Width: 2, Background: [3]uint8{255, 255, 255}}
	got := pixelsReference(p, img)
	// Red 200 at alpha 128 over white, in 16 bits: premultiplied
	// 51400*32896/65535 = 25800, plus 65535*32639/65535 = 32639 of
	// background, is 58439, high byte 228.
	want := []uint8{10, 228, 20, 177, 30, 127}
	if !bytes.Equal(got, want) {
		t.Fatalf("reference %v, want %v", got, want)
	}
	if pix := p.Pixels(img); !bytes.Equal(pix, want) {
		t.Fatalf("Pixels %v, want %v", pix, want)
	}
}
