package data

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/bicyc/bicyc/imaging"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist package installs
// the four Fashion-MNIST IDX files; LoadFashionMNIST("") reads from here.
// It is config.FashionMNISTDir, the default data.dir, too (config's tests
// keep the two equal; config does not import this package).
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// FashionMNISTClasses are the official Fashion-MNIST class names, indexed by
// label (Xiao, Rasul and Vollgraf, 2017: the labels table of the
// Fashion-MNIST README).
var FashionMNISTClasses = []string{
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}

// MNISTClasses are the MNIST class names: the digits, indexed by label.
var MNISTClasses = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// IDX constants (LeCun et al., "THE MNIST DATABASE", file formats): the magic
// number is two zero bytes, a type code and the number of dimensions, each
// dimension follows as a big-endian uint32.
const (
	idxTypeUint8 = 0x08
	// maxIDXPayload bounds the payload a header may declare (16 GiB), so an
	// absurd header fails before anything is read or allocated.
	maxIDXPayload = 1 << 34
	// firstReadChunk is the most memory committed before the payload has
	// shown that it really is as large as its header says.
	firstReadChunk = 1 << 20
)

// gzipMagic are the first two bytes of every gzip stream (RFC 1952, 2.3.1).
var gzipMagic = []byte{0x1f, 0x8b}

// LoadIDX reads an IDX image file (uint8, dimensions N x H x W) and its IDX
// label file (uint8, dimension N) into a single-channel Dataset. Each file
// may be gzip-compressed or plain; the magic bytes decide, not the name. The
// classes are numbered 0..max(label) and named "class_%d".
//
// Errors name the file and wrap imaging.ErrFormat (wrong magic, wrong type or
// dimension count, truncated data, trailing bytes, image and label counts
// that differ, a corrupt gzip stream) or fs.ErrNotExist.
func LoadIDX(imagesPath, labelsPath string) (*Dataset, error) {
	return loadIDX(imagesPath, labelsPath, nil)
}

// LoadFashionMNIST reads the Fashion-MNIST training (60000 images) and test
// (10000 images) sets, 1x28x28 each, from dir, or from FashionMNISTDir when
// dir is empty. The files are train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each with or without a
// .gz suffix. Class names are FashionMNISTClasses; a label >= 10 is an error
// wrapping ErrLabelRange.
func LoadFashionMNIST(dir string) (train, test *Dataset, err error) {
	if dir == "" {
		dir = FashionMNISTDir
	}
	return loadIDXPair("fashion-mnist", dir, FashionMNISTClasses)
}

// LoadMNIST reads the MNIST training and test sets from dir, with the same
// file names and rules as LoadFashionMNIST; class names are MNISTClasses.
func LoadMNIST(dir string) (train, test *Dataset, err error) {
	return loadIDXPair("mnist", dir, MNISTClasses)
}

// loadIDXPair loads the train and test splits of an MNIST-style directory.
func loadIDXPair(name, dir string, classNames []string) (train, test *Dataset, err error) {
	load := func(split, prefix string) (*Dataset, error) {
		images, err := findFile(dir, prefix+"-images-idx3-ubyte")
		if err != nil {
			return nil, err
		}
		labels, err := findFile(dir, prefix+"-labels-idx1-ubyte")
		if err != nil {
			return nil, err
		}
		ds, err := loadIDX(images, labels, classNames)
		if err != nil {
			return nil, err
		}
		ds.Name = name + "-" + split
		return ds, nil
	}
	if train, err = load("train", "train"); err != nil {
		return nil, nil, err
	}
	if test, err = load("test", "t10k"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// findFile returns dir/base.gz or dir/base, whichever exists first.
func findFile(dir, base string) (string, error) {
	for _, name := range []string{base + ".gz", base} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("data: %w", err)
		}
	}
	return "", fmt.Errorf("data: %s: neither %s.gz nor %s found: %w", dir, base, base, fs.ErrNotExist)
}

// loadIDX reads an image and a label file. With classNames nil the classes
// are numbered from the labels; otherwise every label must index classNames.
func loadIDX(imagesPath, labelsPath string, classNames []string) (*Dataset, error) {
	imgFile, err := openIDX(imagesPath, 3)
	if err != nil {
		return nil, err
	}
	defer imgFile.Close()
	lblFile, err := openIDX(labelsPath, 1)
	if err != nil {
		return nil, err
	}
	defer lblFile.Close()

	n, h, w := imgFile.dims[0], imgFile.dims[1], imgFile.dims[2]
	if lblFile.dims[0] != n {
		return nil, fmt.Errorf("data: %s: %w: %d labels for %d images in %s", labelsPath, imaging.ErrFormat, lblFile.dims[0], n, imagesPath)
	}
	rawLabels, err := lblFile.readPayload()
	if err != nil {
		return nil, err
	}
	labels := make([]int, n)
	maxLabel := -1
	for i, b := range rawLabels {
		labels[i] = int(b)
		maxLabel = max(maxLabel, int(b))
	}
	if classNames == nil {
		classNames = numberedClassNames(maxLabel + 1)
	} else if err := checkLabels(labelsPath, labels, len(classNames)); err != nil {
		return nil, err
	}
	pixels, err := imgFile.readPayload()
	if err != nil {
		return nil, err
	}
	return &Dataset{
		Name:       filepath.Base(imagesPath),
		Channels:   1,
		Height:     h,
		Width:      w,
		Pixels:     pixels,
		Labels:     labels,
		ClassNames: slices.Clone(classNames),
		Source:     imagesPath,
	}, nil
}

// idxFile is an open IDX file positioned after its header.
type idxFile struct {
	path    string
	file    *os.File
	r       io.Reader
	gz      *gzip.Reader
	dims    []int
	payload int64 // product of dims: bytes of uint8 data after the header
}

// openIDX opens path, decompressing it if it starts with the gzip magic,
// and reads a uint8 IDX header with wantDims dimensions. For a plain file it
// also checks the file size against the header before returning.
func openIDX(path string, wantDims int) (*idxFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	x := &idxFile{path: path, file: f}
	if err := x.init(wantDims); err != nil {
		x.Close()
		return nil, err
	}
	return x, nil
}

func (x *idxFile) init(wantDims int) error {
	br := bufio.NewReaderSize(x.file, 1<<16)
	x.r = br
	head, err := br.Peek(2)
	if err != nil {
		return x.formatErr("file is empty or shorter than an idx header")
	}
	compressed := head[0] == gzipMagic[0] && head[1] == gzipMagic[1]
	if compressed {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("data: %s: %w: gzip header: %w", x.path, imaging.ErrFormat, err)
		}
		x.gz = gz
		x.r = gz
	}
	var magic [4]byte
	if _, err := io.ReadFull(x.r, magic[:]); err != nil {
		return x.readErr("idx magic", err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return x.formatErr(fmt.Sprintf("wrong magic bytes % x, not an idx file", magic))
	}
	if magic[2] != idxTypeUint8 {
		return x.formatErr(fmt.Sprintf("idx data type 0x%02x, only unsigned byte (0x08) is supported", magic[2]))
	}
	if int(magic[3]) != wantDims {
		return x.formatErr(fmt.Sprintf("idx file has %d dimensions, want %d", magic[3], wantDims))
	}
	raw := make([]byte, 4*wantDims)
	if _, err := io.ReadFull(x.r, raw); err != nil {
		return x.readErr("idx dimensions", err)
	}
	x.dims = make([]int, wantDims)
	for i := range x.dims {
		x.dims[i] = int(binary.BigEndian.Uint32(raw[4*i:]))
	}
	x.payload = 1
	for i, d := range x.dims {
		if d == 0 {
			return x.formatErr(fmt.Sprintf("idx dimension %d of %v is 0", i, x.dims))
		}
		if x.payload > maxIDXPayload/int64(d) {
			return x.formatErr(fmt.Sprintf("idx header declares dimensions %v, more than the %d-byte limit", x.dims, int64(maxIDXPayload)))
		}
		x.payload *= int64(d)
	}
	if !compressed {
		st, err := x.file.Stat()
		if err != nil {
			return fmt.Errorf("data: %w", err)
		}
		if have, want := st.Size(), int64(4+4*wantDims)+x.payload; have != want {
			return x.formatErr(fmt.Sprintf("header declares dimensions %v (%d bytes with header), file has %d bytes", x.dims, want, have))
		}
	}
	return nil
}

// readPayload reads the whole payload and checks that nothing follows it.
// Memory grows with the data actually read, so a header that declares far
// more than the (compressed) file holds fails after at most a few times the
// real data size has been allocated.
func (x *idxFile) readPayload() ([]byte, error) {
	buf := make([]byte, 0, min(x.payload, firstReadChunk))
	for int64(len(buf)) < x.payload {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(x.payload-int64(len(buf)), int64(len(buf)))))
		}
		m, err := x.r.Read(buf[len(buf):min(cap(buf), int(x.payload))])
		buf = buf[:len(buf)+m]
		if err == io.EOF && int64(len(buf)) < x.payload {
			return nil, x.formatErr(fmt.Sprintf("truncated: header declares dimensions %v (%d data bytes), only %d present", x.dims, x.payload, len(buf)))
		}
		if err != nil && err != io.EOF {
			return nil, x.readErr("idx data", err)
		}
	}
	// Reading to EOF also makes the gzip reader verify its CRC-32 and size.
	var probe [1]byte
	n, err := io.ReadFull(x.r, probe[:])
	if n > 0 {
		return nil, x.formatErr(fmt.Sprintf("trailing bytes after the %d data bytes declared by dimensions %v", x.payload, x.dims))
	}
	if err != io.EOF {
		return nil, x.readErr("end of idx data", err)
	}
	return buf, nil
}

// Close closes the underlying file; it is safe to call on a half-opened file.
func (x *idxFile) Close() error {
	if x.gz != nil {
		x.gz.Close()
	}
	return x.file.Close()
}

func (x *idxFile) formatErr(problem string) error {
	return fmt.Errorf("data: %s: %w: %s", x.path, imaging.ErrFormat, problem)
}

// readErr classifies a read failure: an early end or a gzip checksum or
// stream error is a malformed file, anything else an I/O error.
func (x *idxFile) readErr(what string, err error) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return x.formatErr("truncated while reading " + what)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("data: %s: %w: reading %s: %w", x.path, imaging.ErrFormat, what, err)
	}
	var corrupt flate.CorruptInputError
	if errors.As(err, &corrupt) {
		return fmt.Errorf("data: %s: %w: reading %s: %w", x.path, imaging.ErrFormat, what, err)
	}
	return fmt.Errorf("data: %s: reading %s: %w", x.path, what, err)
}
