package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bicyc/bicyc/imaging"
)

// CIFAR binary layout (Krizhevsky, "Learning Multiple Layers of Features
// from Tiny Images", 2009; the "binary version" section of the CIFAR web
// page): each record is its label byte(s) followed by 3072 pixel bytes, the
// 1024 red values of the 32x32 image in row-major order, then green, then
// blue. That is already CHW.
const (
	cifarSide        = 32
	cifarImageBytes  = 3 * cifarSide * cifarSide
	cifar10Classes   = 10
	cifar100Classes  = 100
	cifar100Coarse   = 20
	cifar10DirName   = "cifar-10-batches-bin"
	cifar100DirName  = "cifar-100-binary"
	cifar10NamesFile = "batches.meta.txt"
)

// LoadCIFAR10 reads the binary version of CIFAR-10 from dir, which is either
// the extracted cifar-10-batches-bin folder or its parent: training images
// from data_batch_1.bin .. data_batch_5.bin (in that order), test images from
// test_batch.bin, 3x32x32 each. Each record is 1 label byte and 3072 pixel
// bytes. Class names come from batches.meta.txt (one per non-empty line,
// exactly 10) when present, else "class_%d".
//
// Errors name the file and wrap imaging.ErrFormat (a size that is not a positive
// multiple of 3073 bytes, a names file without exactly 10 names),
// ErrLabelRange (a label >= 10) or fs.ErrNotExist.
func LoadCIFAR10(dir string) (train, test *Dataset, err error) {
	dir = datasetFolder(dir, cifar10DirName, "test_batch.bin")
	names, err := readClassNames(filepath.Join(dir, cifar10NamesFile), cifar10Classes)
	if err != nil {
		return nil, nil, err
	}
	var trainFiles []string
	for i := 1; i <= 5; i++ {
		trainFiles = append(trainFiles, filepath.Join(dir, fmt.Sprintf("data_batch_%d.bin", i)))
	}
	format := cifarFormat{labelBytes: 1, fineLabel: 0, classNames: names}
	if train, err = format.load("cifar10-train", dir, trainFiles); err != nil {
		return nil, nil, err
	}
	if test, err = format.load("cifar10-test", dir, []string{filepath.Join(dir, "test_batch.bin")}); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// LoadCIFAR100 reads the binary version of CIFAR-100 from dir, which is
// either the extracted cifar-100-binary folder or its parent: train.bin and
// test.bin, 3x32x32 images. Each record is 2 label bytes, the coarse label
// (superclass, < 20) then the fine label (< 100), and 3072 pixel bytes; the
// fine label is the Dataset label. Class names come from
// fine_label_names.txt (exactly 100 non-empty lines) when present, else
// "class_%d".
//
// Errors are as for LoadCIFAR10, with a record size of 3074 bytes.
func LoadCIFAR100(dir string) (train, test *Dataset, err error) {
	dir = datasetFolder(dir, cifar100DirName, "test.bin")
	names, err := readClassNames(filepath.Join(dir, "fine_label_names.txt"), cifar100Classes)
	if err != nil {
		return nil, nil, err
	}
	format := cifarFormat{labelBytes: 2, fineLabel: 1, coarseClasses: cifar100Coarse, classNames: names}
	if train, err = format.load("cifar100-train", dir, []string{filepath.Join(dir, "train.bin")}); err != nil {
		return nil, nil, err
	}
	if test, err = format.load("cifar100-test", dir, []string{filepath.Join(dir, "test.bin")}); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// datasetFolder returns dir/sub when dir itself lacks marker but dir/sub
// exists, so callers may name either the extracted folder or its parent.
func datasetFolder(dir, sub, marker string) string {
	if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
		return dir
	}
	if st, err := os.Stat(filepath.Join(dir, sub)); err == nil && st.IsDir() {
		return filepath.Join(dir, sub)
	}
	return dir
}

// readClassNames reads one class name per non-empty line. A missing file
// gives "class_%d" names; a file with another number of names is an error.
func readClassNames(path string, want int) ([]string, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return numberedClassNames(want), nil
	}
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			names = append(names, line)
		}
	}
	if len(names) != want {
		return nil, fmt.Errorf("data: %s: %w: %d class names, want %d", path, imaging.ErrFormat, len(names), want)
	}
	return names, nil
}

// cifarFormat describes one CIFAR binary record layout.
type cifarFormat struct {
	labelBytes    int // label bytes before the pixels of each record
	fineLabel     int // which label byte is the class label
	coarseClasses int // when > 0, byte 0 is a coarse label that must be below it
	classNames    []string
}

// load reads the records of files, in order, into one Dataset.
func (f cifarFormat) load(name, dir string, files []string) (*Dataset, error) {
	record := int64(f.labelBytes + cifarImageBytes)
	total := 0
	for _, path := range files {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		if st.Size() == 0 || st.Size()%record != 0 {
			return nil, fmt.Errorf("data: %s: %w: size %d bytes is not a positive multiple of the %d-byte record (%d label byte(s) + 3x32x32 pixels)", path, imaging.ErrFormat, st.Size(), record, f.labelBytes)
		}
		total += int(st.Size() / record)
	}
	ds := &Dataset{
		Name:       name,
		Channels:   3,
		Height:     cifarSide,
		Width:      cifarSide,
		Pixels:     make([]uint8, total*cifarImageBytes),
		Labels:     make([]int, total),
		ClassNames: append([]string(nil), f.classNames...),
		Source:     dir,
	}
	next := 0
	for _, path := range files {
		n, err := f.readFile(path, ds, next)
		if err != nil {
			return nil, err
		}
		next += n
	}
	if next != total {
		return nil, fmt.Errorf("data: %s: %w: files changed while reading (%d records, expected %d)", dir, imaging.ErrFormat, next, total)
	}
	return ds, nil
}

// readFile reads the records of path into ds starting at image first and
// returns how many it read.
func (f cifarFormat) readFile(path string, ds *Dataset, first int) (int, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("data: %w", err)
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 1<<16)
	label := make([]byte, f.labelBytes)
	i := first
	for ; ; i++ {
		if _, err := io.ReadFull(r, label); err == io.EOF {
			break
		} else if err != nil {
			return 0, fmt.Errorf("data: %s: record %d: %w", path, i-first, err)
		}
		if i >= ds.Len() {
			return 0, fmt.Errorf("data: %s: %w: file grew while reading", path, imaging.ErrFormat)
		}
		if _, err := io.ReadFull(r, ds.Pixels[i*cifarImageBytes:(i+1)*cifarImageBytes]); err != nil {
			return 0, fmt.Errorf("data: %s: %w: record %d: %w", path, imaging.ErrFormat, i-first, err)
		}
		if f.coarseClasses > 0 && int(label[0]) >= f.coarseClasses {
			return 0, fmt.Errorf("data: %s: %w: record %d has coarse label %d, want < %d", path, ErrLabelRange, i-first, label[0], f.coarseClasses)
		}
		l := int(label[f.fineLabel])
		if l >= len(f.classNames) {
			return 0, fmt.Errorf("data: %s: %w: record %d has label %d, dataset has %d classes", path, ErrLabelRange, i-first, l, len(f.classNames))
		}
		ds.Labels[i] = l
	}
	return i - first, nil
}
