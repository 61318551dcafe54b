package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/bicyc/bicyc/bounded"
)

// LoadImageFolder reads a dataset stored as one sub-folder of root per class,
// in the layout of torchvision's ImageFolder: the sorted sub-folder names are
// the class names and their indices the labels. Each class folder is walked
// recursively in lexical order (ImageFiles); files with an ImageExtensions
// extension (any case) are decoded by DecodeImageFile (the format is
// detected from the content, at most MaxImagePixels) and turned into uint8
// CHW by p.Pixels, the same conversion inference applies, before the next
// one is decoded, so memory holds at most one decoded image per CPU. Hidden
// files and folders (name starting with ".") and other files are skipped;
// image-named files that are not regular files (named pipes, devices,
// sockets) are skipped without being opened and listed in the Dataset's
// Skipped. Only p's Channels, Height, Width and Background matter here.
//
// Errors name the folder or file and wrap ErrPreprocess (invalid p),
// ErrEmptyClass (a class folder without images, or no class folder at
// all), ErrFormat (an image that does not decode) or fs.ErrNotExist.
func LoadImageFolder(root string, p Preprocess) (*Dataset, error) {
	classes, err := classFolders(root)
	if err != nil {
		return nil, err
	}
	return loadImageFolder(root, classes, p)
}

// LoadImageFolders reads a training and a test image folder (see
// LoadImageFolder). Both must have the same class sub-folders; otherwise
// the error wraps ErrClassMismatch and names the classes that differ.
func LoadImageFolders(trainRoot, testRoot string, p Preprocess) (train, test *Dataset, err error) {
	trainClasses, err := classFolders(trainRoot)
	if err != nil {
		return nil, nil, err
	}
	testClasses, err := classFolders(testRoot)
	if err != nil {
		return nil, nil, err
	}
	if !slices.Equal(trainClasses, testClasses) {
		return nil, nil, fmt.Errorf("data: %s and %s: %w: only in train %q, only in test %q", trainRoot, testRoot, ErrClassMismatch, missingFrom(trainClasses, testClasses), missingFrom(testClasses, trainClasses))
	}
	if train, err = loadImageFolder(trainRoot, trainClasses, p); err != nil {
		return nil, nil, err
	}
	if test, err = loadImageFolder(testRoot, testClasses, p); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// missingFrom returns the names of a that are not in b.
func missingFrom(a, b []string) []string {
	var out []string
	for _, name := range a {
		if !slices.Contains(b, name) {
			out = append(out, name)
		}
	}
	return out
}

// classFolders returns the sorted names of the visible sub-folders of root.
func classFolders(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("data: image folder: %w", err)
	}
	var classes []string
	for _, e := range entries {
		if isDir(root, e) && !strings.HasPrefix(e.Name(), ".") {
			classes = append(classes, e.Name())
		}
	}
	if len(classes) == 0 {
		return nil, fmt.Errorf("data: %s: %w: no class sub-folders", root, ErrEmptyClass)
	}
	return classes, nil // os.ReadDir sorts by name
}

// isDir reports whether e is a directory, following a symbolic link.
func isDir(parent string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(filepath.Join(parent, e.Name()))
		return err == nil && st.IsDir()
	}
	return e.IsDir()
}

// loadImageFolder lists and decodes the images of the given class folders.
func loadImageFolder(root string, classes []string, p Preprocess) (*Dataset, error) {
	if err := p.checkGeometry(); err != nil {
		return nil, fmt.Errorf("data: image folder %s: %w", root, err)
	}
	ds := &Dataset{
		Name:       filepath.Base(filepath.Clean(root)),
		Channels:   p.Channels,
		Height:     p.Height,
		Width:      p.Width,
		ClassNames: slices.Clone(classes),
		Source:     root,
	}
	var files []string
	for label, class := range classes {
		classFiles, err := imageFiles(filepath.Join(root, class), ds)
		if err != nil {
			return nil, err
		}
		for _, f := range classFiles {
			files = append(files, f)
			ds.Labels = append(ds.Labels, label)
		}
	}
	ds.Pixels = make([]uint8, len(files)*p.ImageSize())
	if err := decodeAll(files, ds, p); err != nil {
		return nil, err
	}
	return ds, nil
}

// ImageFiles walks dir recursively in lexical order and returns its image
// files (IsImageFile), symbolic links to regular files included. Hidden
// files and folders (name starting with ".") are passed over. Image-named
// entries that are not regular files - named pipes, devices, sockets,
// links to them - are never opened (a pipe would block the walk forever):
// each is one error in skipped, naming the path and wrapping
// bounded.ErrNotRegular. err is the first error of the walk itself (an
// unreadable folder), naming the path.
func ImageFiles(dir string) (files []string, skipped []error, err error) {
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() || !IsImageFile(path) {
			return nil
		}
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			info, err := os.Stat(path)
			if err != nil {
				skipped = append(skipped, fmt.Errorf("%s: %w", path, unwrapPath(err)))
				return nil
			}
			mode = info.Mode()
		}
		if !mode.IsRegular() {
			skipped = append(skipped, fmt.Errorf("%s: %w (%s)", path, bounded.ErrNotRegular, bounded.Kind(mode)))
			return nil
		}
		files = append(files, path)
		return nil
	})
	return files, skipped, err
}

// unwrapPath drops the path of a file-system error, for messages that
// start with it already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// imageFiles lists the images of one class folder; skipped files are
// appended to ds.Skipped.
func imageFiles(dir string, ds *Dataset) ([]string, error) {
	files, skipped, err := ImageFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("data: image folder: %w", err)
	}
	for _, s := range skipped {
		ds.Skipped = append(ds.Skipped, s.Error())
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("data: %s: %w: no image files (%s)", dir, ErrEmptyClass, strings.Join(ImageExtensions, " "))
	}
	return files, nil
}

// decodeAll decodes files[i] into image i of ds, on all CPUs. On failure it
// returns the error of the first failing file in list order.
func decodeAll(files []string, ds *Dataset, p Preprocess) error {
	errs := make([]error, len(files))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := range jobs {
				img, err := DecodeImageFile(files[i])
				if err != nil {
					errs[i] = err
					continue
				}
				copy(ds.Pixels[i*ds.ImageSize():], p.Pixels(img))
			}
		})
	}
	for i := range files {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
