package data

import (
	"errors"
	"fmt"
	"image"
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
	return loadImageFolder(root, classes, p, 0)
}

// LoadImageFolders reads a training and a test image folder (see
// LoadImageFolder). Both must have the same class sub-folders; otherwise
// the error wraps ErrClassMismatch and names the classes that differ.
func LoadImageFolders(trainRoot, testRoot string, p Preprocess) (train, test *Dataset, err error) {
	return LoadPhotoFolders(trainRoot, testRoot, p, 0)
}

// LoadPhotoFolders is LoadImageFolders that also keeps every training
// image at load resolution in train.Photos, its shorter side resized to
// loadSide (see Photos for the memory this takes), for random-resized-crop
// training; loadSide 0 keeps none. The Dataset images of both sets are the
// test-time views p.Pixels gives, as with LoadImageFolders.
func LoadPhotoFolders(trainRoot, testRoot string, p Preprocess, loadSide int) (train, test *Dataset, err error) {
	if loadSide < 0 || loadSide > maxPreprocessSide {
		return nil, nil, fmt.Errorf("data: image folder %s: %w: load side %d, want [0, %d]", trainRoot, ErrPreprocess, loadSide, maxPreprocessSide)
	}
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
	if train, err = loadImageFolder(trainRoot, trainClasses, p, loadSide); err != nil {
		return nil, nil, err
	}
	if test, err = loadImageFolder(testRoot, testClasses, p, 0); err != nil {
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

// loadImageFolder lists and decodes the images of the given class folders,
// keeping them at load resolution too when loadSide > 0.
func loadImageFolder(root string, classes []string, p Preprocess, loadSide int) (*Dataset, error) {
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
	if loadSide > 0 {
		ds.Photos = &Photos{Channels: p.Channels, Pixels: make([][]uint8, len(files)), Sizes: make([]image.Point, len(files))}
	}
	if err := decodeAll(files, ds, p, loadSide); err != nil {
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
// appended to ds.Skipped (dropped when ds is nil: a layout conversion
// copies image files only).
func imageFiles(dir string, ds *Dataset) ([]string, error) {
	files, skipped, err := ImageFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("data: image folder: %w", err)
	}
	for _, s := range skipped {
		if ds != nil {
			ds.Skipped = append(ds.Skipped, s.Error())
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("data: %s: %w: no image files (%s)", dir, ErrEmptyClass, strings.Join(ImageExtensions, " "))
	}
	return files, nil
}

// decodeAll decodes files[i] into image i of ds (storeImage), on all CPUs. On failure it
// returns the error of the first failing file in list order.
func decodeAll(files []string, ds *Dataset, p Preprocess, loadSide int) error {
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
				storeImage(ds, i, img, p, loadSide)
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

// storeImage writes image i of ds: its test-time view p.Pixels, and, when
// ds keeps photos, the same image at load resolution (shorter side
// loadSide).
func storeImage(ds *Dataset, i int, img image.Image, p Preprocess, loadSide int) {
	view := ds.Pixels[i*ds.ImageSize() : (i+1)*ds.ImageSize()]
	if ds.Photos == nil || img.Bounds().Empty() {
		copy(view, p.Pixels(img))
		return
	}
	rgba := composite(img, p.Background)
	photo, win := photoPixels(rgba, p.Channels, loadSide)
	ds.Photos.Pixels[i], ds.Photos.Sizes[i] = photo, win.Size()
	// At the test-time resize size the view is a window of the photo: the
	// same resized pixels, so copying them saves a second resize.
	if p.ResizeMode == ResizeCenterCrop && loadSide == p.ResizeShorter {
		full := limitAspect(rgba).Rect.Size()
		nw, nh := ShorterSideSize(full.X, full.Y, loadSide)
		if vw := CenterCropWindow(nw, nh, p.Width, p.Height); vw.In(win) {
			cropCHW(photo, p.Channels, win.Dy(), win.Dx(), vw.Sub(win.Min), view)
			return
		}
	}
	p.pixelsOf(rgba, view)
}
