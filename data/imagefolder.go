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
	"sync"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/imaging"
)

// LoadImageFolder reads a dataset stored as one sub-folder of root per class,
// in the layout of torchvision's ImageFolder, as ListClassFolders lists it:
// the sorted sub-folder names are the class names and their indices the
// labels; each class folder's images are those ImageFiles finds. Every
// image is decoded by imaging.DecodeImageFile (the format is detected from the
// content, at most imaging.MaxImagePixels) and turned into uint8 CHW by p.Pixels,
// the same conversion inference applies, before the next one is decoded,
// so memory holds at most one decoded image per CPU. What the listing
// passed over is reported in the Dataset's Skipped. Only p's Channels,
// Height, Width and Background matter here.
//
// Every file is tried: the error names every unreadable one (the first 20,
// then a count; see LoadFolders to train on the rest). Errors name the
// folder or file and wrap imaging.ErrPreprocess (invalid p), ErrEmptyClass (a
// class folder without images, or no class folder at all),
// names.ErrInvalid (a class name out of bounds), imaging.ErrFormat (an image that
// does not decode) or fs.ErrNotExist.
func LoadImageFolder(root string, p imaging.Preprocess) (*Dataset, error) {
	classes, skipped, err := ListClassFolders(root)
	if err != nil {
		return nil, err
	}
	return loadImageFolder(root, classes, skipped, p, FolderOptions{})
}

// LoadImageFolders reads a training and a test image folder (see
// LoadImageFolder). Both must have the same class sub-folders; otherwise
// the error wraps ErrClassMismatch and names the classes that differ.
func LoadImageFolders(trainRoot, testRoot string, p imaging.Preprocess) (train, test *Dataset, err error) {
	return LoadFolders(trainRoot, testRoot, p, FolderOptions{})
}

// LoadPhotoFolders is LoadImageFolders that also keeps every training
// image at load resolution in train.Photos, its shorter side resized to
// loadSide (see Photos for the memory this takes), for random-resized-crop
// training; loadSide 0 keeps none. The Dataset images of both sets are the
// test-time views p.Pixels gives, as with LoadImageFolders.
func LoadPhotoFolders(trainRoot, testRoot string, p imaging.Preprocess, loadSide int) (train, test *Dataset, err error) {
	return LoadFolders(trainRoot, testRoot, p, FolderOptions{LoadSide: loadSide})
}

// FolderOptions change how LoadFolders reads image folders.
type FolderOptions struct {
	// LoadSide > 0 keeps every training image at load resolution too
	// (LoadPhotoFolders); 0 keeps none.
	LoadSide int
	// SkipUnreadable leaves out the images that do not decode, each named
	// in the Dataset's Skipped, instead of failing (the config key
	// data.skip_unreadable). A class left without images is still an
	// error.
	SkipUnreadable bool
}

// LoadFolders reads a training and a test image folder as
// LoadPhotoFolders does, with the options o.
func LoadFolders(trainRoot, testRoot string, p imaging.Preprocess, o FolderOptions) (train, test *Dataset, err error) {
	if o.LoadSide < 0 || o.LoadSide > imaging.MaxSide {
		return nil, nil, fmt.Errorf("data: image folder %s: %w: load side %d, want [0, %d]", trainRoot, imaging.ErrPreprocess, o.LoadSide, imaging.MaxSide)
	}
	trainClasses, trainSkipped, err1 := ListClassFolders(trainRoot)
	testClasses, testSkipped, err2 := ListClassFolders(testRoot)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, err
	}
	trainNames, testNames := classNames(trainClasses), classNames(testClasses)
	if !slices.Equal(trainNames, testNames) {
		return nil, nil, fmt.Errorf("data: %s and %s: %w: only in train %q, only in test %q", trainRoot, testRoot, ErrClassMismatch, missingFrom(trainNames, testNames), missingFrom(testNames, trainNames))
	}
	train, err1 = loadImageFolder(trainRoot, trainClasses, trainSkipped, p, o)
	test, err2 = loadImageFolder(testRoot, testClasses, testSkipped, p, FolderOptions{SkipUnreadable: o.SkipUnreadable})
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// classNames returns the names of classes, in order.
func classNames(classes []ClassFolder) []string {
	out := make([]string, len(classes))
	for i, c := range classes {
		out[i] = c.Name
	}
	return out
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

// isDir reports whether e is a directory, following a symbolic link.
func isDir(parent string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(filepath.Join(parent, e.Name()))
		return err == nil && st.IsDir()
	}
	return e.IsDir()
}

// loadImageFolder decodes the images of the listed class folders, keeping
// them at load resolution too when o.LoadSide > 0.
func loadImageFolder(root string, classes []ClassFolder, skipped []string, p imaging.Preprocess, o FolderOptions) (*Dataset, error) {
	if err := p.CheckGeometry(); err != nil {
		return nil, fmt.Errorf("data: image folder %s: %w", root, err)
	}
	ds := &Dataset{
		Name:       filepath.Base(filepath.Clean(root)),
		Channels:   p.Channels,
		Height:     p.Height,
		Width:      p.Width,
		ClassNames: classNames(classes),
		Source:     root,
		Skipped:    skipped,
	}
	var files []string
	for label, class := range classes {
		for _, f := range class.Files {
			files = append(files, f)
			ds.Labels = append(ds.Labels, label)
		}
	}
	ds.Pixels = make([]uint8, len(files)*p.ImageSize())
	if o.LoadSide > 0 {
		ds.Photos = &Photos{Channels: p.Channels, Pixels: make([][]uint8, len(files)), Sizes: make([]image.Point, len(files))}
	}
	errs := decodeAll(files, ds, p, o.LoadSide)
	err := Unreadable(errs, len(files))
	switch {
	case err == nil:
		return ds, nil
	case !o.SkipUnreadable:
		return nil, fmt.Errorf("data: image folder %s (data.skip_unreadable trains on the rest): %w", root, err)
	}
	for _, err := range errs {
		if err != nil {
			ds.Skipped = append(ds.Skipped, "unreadable, left out: "+err.Error())
		}
	}
	if err := ds.drop(errs); err != nil {
		return nil, fmt.Errorf("data: image folder %s: %w", root, err)
	}
	return ds, nil
}

// drop removes image i of ds wherever failed[i] is not nil; a class left
// without images is an error wrapping ErrEmptyClass.
func (ds *Dataset) drop(failed []error) error {
	size := ds.ImageSize()
	kept := 0
	counts := make([]int, len(ds.ClassNames))
	for i, err := range failed {
		if err != nil {
			continue
		}
		copy(ds.Pixels[kept*size:(kept+1)*size], ds.Pixels[i*size:(i+1)*size])
		ds.Labels[kept] = ds.Labels[i]
		if ds.Photos != nil {
			ds.Photos.Pixels[kept], ds.Photos.Sizes[kept] = ds.Photos.Pixels[i], ds.Photos.Sizes[i]
		}
		counts[ds.Labels[i]]++
		kept++
	}
	ds.Pixels, ds.Labels = ds.Pixels[:kept*size], ds.Labels[:kept]
	if ds.Photos != nil {
		ds.Photos.Pixels, ds.Photos.Sizes = ds.Photos.Pixels[:kept], ds.Photos.Sizes[:kept]
	}
	var empty []string
	for c, n := range counts {
		if n == 0 {
			empty = append(empty, ds.ClassNames[c])
		}
	}
	if len(empty) > 0 {
		return fmt.Errorf("%w: no readable image left in class %q", ErrEmptyClass, empty)
	}
	return nil
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

// decodeAll decodes files[i] into image i of ds (storeImage), on all CPUs,
// every file whatever the others do, and returns each file's error (nil
// where it decoded).
func decodeAll(files []string, ds *Dataset, p imaging.Preprocess, loadSide int) []error {
	errs := make([]error, len(files))
	parallel(len(files), func(i int) {
		img, err := imaging.DecodeImageFile(files[i])
		if err != nil {
			errs[i] = err
			return
		}
		storeImage(ds, i, img, p, loadSide)
	})
	return errs
}

// CheckImageFiles decodes every file as imaging.DecodeImageFile does, with at most
// maxPixels pixels, on all CPUs, without keeping the pixels, and returns
// each file's error (nil where it decodes): a folder is judged whole
// before any work starts. Unreadable joins the errors into one message.
func CheckImageFiles(files []string, maxPixels int64) []error {
	errs := make([]error, len(files))
	parallel(len(files), func(i int) {
		f, _, err := bounded.OpenRegular(files[i])
		if err != nil {
			errs[i] = fmt.Errorf("data: %w", err)
			return
		}
		defer f.Close()
		if _, _, err := imaging.DecodeImage(f, maxPixels); err != nil {
			errs[i] = fmt.Errorf("data: %s: %w", files[i], err)
		}
	})
	return errs
}

// Unreadable returns one error for the non-nil errors of errs (one per
// file of total files), naming the first 20 and counting the rest, or nil
// when all are nil. It wraps every error.
func Unreadable(errs []error, total int) error {
	var problems []error
	for _, err := range errs {
		if err != nil {
			problems = append(problems, err)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return joinProblems(problems, fmt.Sprintf("of %d image files are unreadable", total))
}

// parallel calls f(0), ..., f(n-1) on GOMAXPROCS goroutines and waits.
func parallel(n int, f func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := range jobs {
				f(i)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// storeImage writes image i of ds: its test-time view p.Pixels, and, when
// ds keeps photos, the same image at load resolution (shorter side
// loadSide).
func storeImage(ds *Dataset, i int, img image.Image, p imaging.Preprocess, loadSide int) {
	view := ds.Pixels[i*ds.ImageSize() : (i+1)*ds.ImageSize()]
	if ds.Photos == nil || img.Bounds().Empty() {
		copy(view, p.Pixels(img))
		return
	}
	rgba := imaging.Composite(img, p.Background)
	photo, win, full := imaging.ResizeShorter(rgba, p.Channels, loadSide, MaxPhotoAspect*loadSide)
	ds.Photos.Pixels[i], ds.Photos.Sizes[i] = photo, win.Size()
	// At the test-time resize size the view is a window of the photo: the
	// same resized pixels, so copying them saves a second resize.
	if p.ResizeMode == arch.CenterCrop && loadSide == p.ResizeShorter {
		if vw := imaging.CenterCropWindow(full.X, full.Y, p.Width, p.Height); vw.In(win) {
			cropCHW(photo, p.Channels, win.Dy(), win.Dx(), vw.Sub(win.Min), view)
			return
		}
	}
	p.PixelsOf(rgba, view)
}
