package data

import (
	"errors"
	"fmt"
	"slices"
)

// Sentinel errors wrapped by the loaders, so callers can branch with
// errors.Is. A malformed file (an IDX or CIFAR file as much as an image)
// wraps imaging.ErrFormat, a missing file fs.ErrNotExist.
var (
	// ErrLabelRange marks a label that is not below the number of class
	// names of the dataset.
	ErrLabelRange = errors.New("label out of range")
	// ErrEmptyClass marks a class folder without any image file.
	ErrEmptyClass = errors.New("empty class folder")
	// ErrClassMismatch marks a train and a test image folder whose class
	// sub-folders differ.
	ErrClassMismatch = errors.New("train and test class folders differ")
)

// Dataset is an in-memory labelled image set.
//
// Pixels holds Len() images of Channels x Height x Width uint8 values each,
// image after image, in NCHW order. Labels[i] is the class id of image i, in
// [0, NumClasses()), and ClassNames[id] is that class's name. Source names
// the file or directory the data came from. Photos is nil except for an
// image-folder training set loaded with a load side (LoadPhotoFolders):
// then Photos.Image(i) is image i at load resolution, the source of
// random-resized crops, while Image(i) stays its test-time view.
//
// A Dataset returned by a loader is consistent (len(Pixels) =
// Len()*Channels*Height*Width, every label in range) and is never modified
// by this package afterwards, so concurrent reads are safe.
type Dataset struct {
	Name                    string
	Channels, Height, Width int
	Pixels                  []uint8
	Labels                  []int
	ClassNames              []string
	Source                  string
	Photos                  *Photos
	// Skipped lists, one message each naming the path, the image-named
	// entries of an image folder that were not read because they are not
	// regular files (named pipes, devices, sockets).
	Skipped []string
}

// Len returns the number of images.
func (d *Dataset) Len() int { return len(d.Labels) }

// NumClasses returns the number of classes, len(ClassNames).
func (d *Dataset) NumClasses() int { return len(d.ClassNames) }

// ImageSize returns the number of uint8 values of one image,
// Channels*Height*Width.
func (d *Dataset) ImageSize() int { return d.Channels * d.Height * d.Width }

// Image returns image i as a CHW view into Pixels (not a copy; its capacity
// ends with the image, so appending to it cannot overwrite image i+1). It
// panics if i is out of range.
func (d *Dataset) Image(i int) []uint8 {
	if i < 0 || i >= d.Len() {
		panic(fmt.Sprintf("data: image index %d out of range [0, %d)", i, d.Len()))
	}
	n := d.ImageSize()
	return d.Pixels[i*n : (i+1)*n : (i+1)*n]
}

// Subset returns the indices of the images whose label is in classes, in
// dataset order. Classes outside [0, NumClasses()) match nothing.
func (d *Dataset) Subset(classes []int) []int {
	return d.Subsets([][]int{classes})[0]
}

// Subsets is Subset of every group of classes, in one pass over the labels:
// an evaluation over T tasks costs one pass instead of T (a run of thousands
// of classes in tasks of ten has hundreds of tasks). A class may be in
// several groups.
func (d *Dataset) Subsets(groups [][]int) [][]int {
	in := make([][]int, d.NumClasses()) // the groups holding each class
	for g, classes := range groups {
		for _, c := range classes {
			if c >= 0 && c < len(in) && !slices.Contains(in[c], g) {
				in[c] = append(in[c], g)
			}
		}
	}
	out := make([][]int, len(groups))
	for i, l := range d.Labels {
		for _, g := range in[l] {
			out[g] = append(out[g], i)
		}
	}
	return out
}

// ClassCounts returns the number of images of each class, indexed by label.
func (d *Dataset) ClassCounts() []int {
	counts := make([]int, d.NumClasses())
	for _, l := range d.Labels {
		counts[l]++
	}
	return counts
}

// checkLabels reports the first label that is not below numClasses.
func checkLabels(file string, labels []int, numClasses int) error {
	for i, l := range labels {
		if l < 0 || l >= numClasses {
			return fmt.Errorf("data: %s: %w: record %d has label %d, dataset has %d classes", file, ErrLabelRange, i, l, numClasses)
		}
	}
	return nil
}

// numberedClassNames returns "class_0" .. "class_{n-1}", the fallback names
// when a dataset ships none.
func numberedClassNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("class_%d", i)
	}
	return names
}
