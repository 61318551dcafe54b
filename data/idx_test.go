package data

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/imaging"
)

func TestLoadFashionMNISTReal(t *testing.T) {
	train, test := loadFashionMNIST(t)
	for _, c := range []struct {
		ds        *Dataset
		name      string
		n, perCls int
	}{{train, "fashion-mnist-train", 60000, 6000}, {test, "fashion-mnist-test", 10000, 1000}} {
		if c.ds.Name != c.name || c.ds.Len() != c.n || c.ds.Channels != 1 || c.ds.Height != 28 || c.ds.Width != 28 {
			t.Fatalf("%s: got name %q, %d images of %dx%dx%d", c.name, c.ds.Name, c.ds.Len(), c.ds.Channels, c.ds.Height, c.ds.Width)
		}
		if len(c.ds.Pixels) != c.n*28*28 {
			t.Fatalf("%s: %d pixel bytes", c.name, len(c.ds.Pixels))
		}
		if !slices.Equal(c.ds.ClassNames, FashionMNISTClasses) || c.ds.NumClasses() != 10 {
			t.Fatalf("%s: class names %q", c.name, c.ds.ClassNames)
		}
		for cls, n := range c.ds.ClassCounts() {
			if n != c.perCls {
				t.Errorf("%s: class %d has %d images, want %d", c.name, cls, n, c.perCls)
			}
		}
		if !strings.HasSuffix(c.ds.Source, ".gz") {
			t.Errorf("%s: source %q", c.name, c.ds.Source)
		}
	}
	// DefaultNormalization's Fashion-MNIST values are the training-set
	// pixel statistics.
	var sum, sq float64
	for _, v := range train.Pixels {
		x := float64(v) / 255
		sum += x
		sq += x * x
	}
	n := float64(len(train.Pixels))
	mean := sum / n
	std := math.Sqrt(sq/n - mean*mean)
	t.Logf("train pixel mean %.5f std %.5f", mean, std)
	wantMean, wantStd := DefaultNormalization(KindFashionMNIST)
	if math.Abs(mean-float64(wantMean[0])) > 1e-3 || math.Abs(std-float64(wantStd[0])) > 1e-3 {
		t.Errorf("train pixel mean %.5f std %.5f, want %v %v within 1e-3", mean, std, wantMean, wantStd)
	}
}

// TestSubsets checks the one-pass Subsets against a plain filter of the
// labels, on Fashion-MNIST, with overlapping, repeated, unknown and empty
// groups.
func TestSubsets(t *testing.T) {
	_, test := loadFashionMNIST(t)
	groups := [][]int{{9, 0, 42}, {3}, {0, 0}, {}, {-1, 5, 9}}
	got := test.Subsets(groups)
	if len(got) != len(groups) {
		t.Fatalf("%d subsets for %d groups", len(got), len(groups))
	}
	for g, classes := range groups {
		var want []int
		for i, l := range test.Labels {
			if slices.Contains(classes, l) {
				want = append(want, i)
			}
		}
		if !slices.Equal(got[g], want) {
			t.Errorf("group %v: %d indices, want %d in dataset order", classes, len(got[g]), len(want))
		}
	}
}

func TestDatasetImageAndSubset(t *testing.T) {
	train, _ := loadFashionMNIST(t)
	img := train.Image(59999)
	if len(img) != 784 || cap(img) != 784 || &img[0] != &train.Pixels[59999*784] {
		t.Fatalf("Image(59999): len %d cap %d, not a view of the last image", len(img), cap(img))
	}
	idx := train.Subset([]int{9, 0, 42})
	if len(idx) != 12000 || !slices.IsSorted(idx) {
		t.Fatalf("Subset(9, 0): %d indices, sorted %v", len(idx), slices.IsSorted(idx))
	}
	for _, i := range idx {
		if l := train.Labels[i]; l != 0 && l != 9 {
			t.Fatalf("Subset(9, 0) returned image %d of class %d", i, l)
		}
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("Image(-1) did not panic")
		}
	}()
	train.Image(-1)
}

// TestLoadIDXPlainAndGzip writes the same tiny dataset as plain and gzip
// IDX files under misleading names: the content decides.
func TestLoadIDXPlainAndGzip(t *testing.T) {
	dir := t.TempDir()
	pixels := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	images := idxBytes(8, []uint32{3, 2, 2}, pixels)
	labels := idxBytes(8, []uint32{3}, []byte{4, 0, 2})
	writeFile(t, filepath.Join(dir, "img.gz"), images)
	writeFile(t, filepath.Join(dir, "lbl"), gzipBytes(t, labels))
	ds, err := LoadIDX(filepath.Join(dir, "img.gz"), filepath.Join(dir, "lbl"))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 3 || ds.Height != 2 || ds.Width != 2 || !slices.Equal(ds.Pixels, pixels) || !slices.Equal(ds.Labels, []int{4, 0, 2}) {
		t.Fatalf("got %+v", ds)
	}
	if want := []string{"class_0", "class_1", "class_2", "class_3", "class_4"}; !slices.Equal(ds.ClassNames, want) {
		t.Errorf("class names %q, want %q", ds.ClassNames, want)
	}
}

// TestLoadMNISTFileNames checks the directory loader accepts names without
// .gz and reports a missing file.
func TestLoadMNISTFileNames(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "train-images-idx3-ubyte"), idxBytes(8, []uint32{2, 1, 1}, []byte{0, 255}))
	writeFile(t, filepath.Join(dir, "train-labels-idx1-ubyte"), idxBytes(8, []uint32{2}, []byte{9, 1}))
	writeFile(t, filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), gzipBytes(t, idxBytes(8, []uint32{1, 1, 1}, []byte{7})))
	_, _, err := LoadMNIST(dir)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "t10k-labels-idx1-ubyte") {
		t.Fatalf("missing label file: got %v", err)
	}
	writeFile(t, filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"), gzipBytes(t, idxBytes(8, []uint32{1}, []byte{3})))
	train, test, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.Name != "mnist-train" || !slices.Equal(train.Labels, []int{9, 1}) || test.Len() != 1 || !slices.Equal(test.ClassNames, MNISTClasses) {
		t.Fatalf("train %+v test %+v", train, test)
	}
}

func TestLoadIDXBadInput(t *testing.T) {
	goodImages := idxBytes(8, []uint32{2, 2, 2}, make([]byte, 8))
	goodLabels := idxBytes(8, []uint32{2}, []byte{0, 1})
	gz := func(b []byte) []byte { return gzipBytes(t, b) }
	corruptGzip := gz(goodImages)
	corruptGzip[len(corruptGzip)-6] ^= 0xff // inside the CRC-32 trailer
	cases := []struct {
		name           string
		images, labels []byte
		named          bool // load with the 10 Fashion-MNIST names
		want           error
		msg            string // part of the message, besides the file name
	}{
		{"wrong magic", append([]byte{1, 2}, goodImages[2:]...), goodLabels, false, imaging.ErrFormat, "magic"},
		{"png as idx", []byte("\x89PNG\r\n\x1a\n0000000000000000"), goodLabels, false, imaging.ErrFormat, "magic"},
		{"int32 type", idxBytes(0x0c, []uint32{2, 2, 2}, make([]byte, 32)), goodLabels, false, imaging.ErrFormat, "data type"},
		{"labels as images", goodLabels, goodLabels, false, imaging.ErrFormat, "dimensions"},
		{"empty file", nil, goodLabels, false, imaging.ErrFormat, "empty"},
		{"short header", goodImages[:9], goodLabels, false, imaging.ErrFormat, "truncated"},
		{"truncated plain", goodImages[:len(goodImages)-1], goodLabels, false, imaging.ErrFormat, "file has 23 bytes"},
		{"truncated gzip payload", gz(goodImages[:len(goodImages)-1]), goodLabels, false, imaging.ErrFormat, "truncated"},
		{"truncated gzip stream", gz(goodImages)[:30], goodLabels, false, imaging.ErrFormat, "truncated"},
		{"gzip checksum", corruptGzip, goodLabels, false, imaging.ErrFormat, "checksum"},
		{"trailing bytes gzip", gz(append(goodImages, 0)), goodLabels, false, imaging.ErrFormat, "trailing"},
		{"trailing bytes plain", append(goodImages, 0), goodLabels, false, imaging.ErrFormat, "file has 25 bytes"},
		{"zero dimension", idxBytes(8, []uint32{2, 0, 2}, nil), goodLabels, false, imaging.ErrFormat, "is 0"},
		{"count mismatch", goodImages, idxBytes(8, []uint32{3}, []byte{0, 1, 2}), false, imaging.ErrFormat, "3 labels for 2 images"},
		{"label 10 of 10 classes", goodImages, idxBytes(8, []uint32{2}, []byte{3, 10}), true, ErrLabelRange, "label 10"},
		{"absurd header", idxBytes(8, []uint32{0xffffffff, 0xffffffff, 0xffffffff}, nil), goodLabels, false, imaging.ErrFormat, "limit"},
	}
	for i, c := range cases {
		dir := t.TempDir()
		imgPath, lblPath := filepath.Join(dir, "images"), filepath.Join(dir, "labels")
		writeFile(t, imgPath, c.images)
		writeFile(t, lblPath, c.labels)
		var names []string
		if c.named {
			names = FashionMNISTClasses
		}
		ds, err := loadIDX(imgPath, lblPath, names)
		t.Logf("case %d (%s): %v", i, c.name, err)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), dir) {
			t.Errorf("case %d (%s): got %v, %v; want %v mentioning %q and the file", i, c.name, ds, err, c.want, c.msg)
		}
	}
}

func TestLoadIDXMissingFile(t *testing.T) {
	_, err := LoadIDX(filepath.Join(t.TempDir(), "none"), "also-none")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "none") {
		t.Fatalf("got %v", err)
	}
	_, _, err = LoadFashionMNIST(t.TempDir())
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "train-images-idx3-ubyte") {
		t.Fatalf("got %v", err)
	}
}

// TestLoadIDXHeaderAllocation checks that a header declaring about 4 GB of
// images in a file of a few bytes fails without allocating anything like it,
// plain (size checked against the header) and gzip (memory grows only with
// the data that really decompresses). The labels are real: 1e6 of them.
func TestLoadIDXHeaderAllocation(t *testing.T) {
	dir := t.TempDir()
	header := idxBytes(8, []uint32{1_000_000, 64, 64}, []byte{1, 2, 3})
	labels := idxBytes(8, []uint32{1_000_000}, make([]byte, 1_000_000))
	for i, gzipped := range []bool{false, true} {
		img, lbl := header, labels
		if gzipped {
			img, lbl = gzipBytes(t, img), gzipBytes(t, lbl)
		}
		writeFile(t, filepath.Join(dir, "images"), img)
		writeFile(t, filepath.Join(dir, "labels"), lbl)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := LoadIDX(filepath.Join(dir, "images"), filepath.Join(dir, "labels"))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, imaging.ErrFormat) || !strings.Contains(err.Error(), "images") {
			t.Errorf("case %d (gzip %v): got %v, want ErrFormat for the image file", i, gzipped, err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("case %d (gzip %v): %v; allocated %d bytes", i, gzipped, err, alloc)
		if alloc > 32<<20 {
			t.Errorf("case %d (gzip %v): allocated %d bytes before failing", i, gzipped, alloc)
		}
	}
}

func TestFindFilePrefersGzip(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x", "x.gz"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := findFile(dir, "x"); err != nil || p != filepath.Join(dir, "x.gz") {
		t.Fatalf("findFile: %q %v", p, err)
	}
}
