package data

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/names"
)

// ClassFolder is one class of a folder of class folders: its name (the
// folder's) and its image files in lexical order.
type ClassFolder struct {
	Name  string
	Files []string
}

// maxListed is how many problems one error names before it only counts
// the rest, so a folder of thousands of bad files gives a readable message.
const maxListed = 20

// ListClassFolders lists root as a folder of class folders. It is the one
// rule of every command that reads class folders (train's image folders,
// learn, add-classes, calibrate; docs/datasets.md, "Image folders"):
//
//   - every sub-folder of root is a class, named after it, in sorted
//     order; a symbolic link to a folder is a class folder like any other;
//   - an entry whose name starts with "." is hidden and not read; a file
//     directly in root is not a class; both are reported in skipped;
//   - a class name is the folder's name in Unicode NFC form (names.NFC),
//     and must follow names.Stored (valid UTF-8, no control characters, no
//     leading or trailing space); the commands that make new classes of
//     them check them whole (names.CheckNew, names.Class: no formatting
//     characters, no two names alike up to letter case), while folders
//     of classes a run already has are read as they were;
//   - a class folder is walked recursively in lexical order (ImageFiles):
//     files with an image extension are its images, symbolic links to
//     files included; hidden entries, files of other extensions, links to
//     folders (not followed, so no walk loops) and image-named entries that
//     are not regular files (named pipes, devices) are passed over and
//     reported in skipped, counted or named;
//   - a class folder without images is an error.
//
// All problems are reported together, in one error naming every bad
// folder (the first maxListed, then a count), wrapping names.ErrInvalid
// for a bad name and ErrEmptyClass for a folder without images or a root
// without class folders. Nothing is decoded: see LoadFolders.
func ListClassFolders(root string) (classes []ClassFolder, skipped []string, err error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("data: image folder: %w", err)
	}
	var problems []error
	rootImages := 0
	for _, e := range entries {
		path := filepath.Join(root, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), "."):
			skipped = append(skipped, fmt.Sprintf("%s: hidden (name starts with \".\"), not read", path))
			continue
		case !isDir(root, e):
			skipped = append(skipped, fmt.Sprintf("%s: not a folder, so not a class (images go in one sub-folder per class)", path))
			if imaging.IsImageFile(e.Name()) {
				rootImages++
			}
			continue
		}
		if err := names.Stored(e.Name()); err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", path, err))
			continue
		}
		w, err := walkImages(path)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		skipped = append(skipped, w.notes(path)...)
		if len(w.files) == 0 {
			problems = append(problems, fmt.Errorf("%s: %w: no image files (%s)", path, ErrEmptyClass, strings.Join(imaging.ImageExtensions, " ")))
			continue
		}
		classes = append(classes, ClassFolder{Name: names.NFC(e.Name()), Files: w.files})
	}
	if len(problems) > 0 {
		return nil, skipped, fmt.Errorf("data: image folder %s: %w", root, joinProblems(problems, "problems with class folders"))
	}
	switch {
	case len(classes) == 0 && rootImages > 0:
		return nil, skipped, fmt.Errorf("data: %s: %w: no class sub-folders, and %d image files directly in the folder: put each class's images in a sub-folder named after the class", root, ErrEmptyClass, rootImages)
	case len(classes) == 0:
		return nil, skipped, fmt.Errorf("data: %s: %w: no class sub-folders", root, ErrEmptyClass)
	}
	return classes, skipped, nil
}

// joinProblems joins problems into one error that names the first
// maxListed, one a line, and counts the rest; it wraps every problem.
func joinProblems(problems []error, what string) error {
	if len(problems) == 1 {
		return problems[0]
	}
	return problemList{what: what, errs: problems}
}

// problemList is joinProblems' error.
type problemList struct {
	what string
	errs []error
}

func (p problemList) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s:", len(p.errs), p.what)
	for _, err := range p.errs[:min(len(p.errs), maxListed)] {
		b.WriteString("\n  ")
		b.WriteString(err.Error())
	}
	if rest := len(p.errs) - maxListed; rest > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more", rest)
	}
	return b.String()
}

func (p problemList) Unwrap() []error { return p.errs }

// imageWalk is what walkImages found in one folder.
type imageWalk struct {
	files   []string
	skipped []error // entries named: not regular files, links to folders
	hidden  int     // entries whose name starts with "."
	other   int     // files without an image extension
	example string  // the first of them
}

// notes reports the entries w passed over, for ListClassFolders' skipped.
func (w imageWalk) notes(dir string) []string {
	var out []string
	for _, s := range w.skipped {
		out = append(out, s.Error())
	}
	if w.hidden > 0 {
		out = append(out, fmt.Sprintf("%s: %d hidden entries (name starts with \".\") not read", dir, w.hidden))
	}
	if w.other > 0 {
		out = append(out, fmt.Sprintf("%s: %d files without an image extension not read (first: %s)", dir, w.other, w.example))
	}
	return out
}

// ImageFiles walks dir recursively in lexical order and returns its image
// files (imaging.IsImageFile), symbolic links to regular files included; dir
// itself may be a link to a folder. Hidden files and folders (name
// starting with ".") and files of other extensions are passed over.
// Entries that cannot be read as images are never opened: named pipes,
// devices, sockets and links to them (a pipe would block the walk
// forever) are each one error in skipped, naming the path and wrapping
// bounded.ErrNotRegular, and so are links to folders, which are not
// followed. err is the first error of the walk itself (an unreadable
// folder), naming the path.
func ImageFiles(dir string) (files []string, skipped []error, err error) {
	w, err := walkImages(dir)
	return w.files, w.skipped, err
}

// walkImages is ImageFiles with the count of what it passed over.
func walkImages(dir string) (imageWalk, error) {
	var w imageWalk
	root := dir
	if info, err := os.Lstat(dir); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		// WalkDir does not follow a link given as its root; with a
		// trailing separator the system resolves it, and the paths
		// reported still start with dir.
		root = dir + string(filepath.Separator)
	}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != root && strings.HasPrefix(e.Name(), ".") {
			w.hidden++
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			return nil
		}
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			info, err := os.Stat(path)
			if err != nil {
				w.skipped = append(w.skipped, fmt.Errorf("%s: %w", path, unwrapPath(err)))
				return nil
			}
			if info.IsDir() {
				w.skipped = append(w.skipped, fmt.Errorf("%s: a link to a folder inside a class folder, not followed", path))
				return nil
			}
			mode = info.Mode()
		}
		if !imaging.IsImageFile(path) {
			if w.other == 0 {
				w.example = path
			}
			w.other++
			return nil
		}
		if !mode.IsRegular() {
			w.skipped = append(w.skipped, fmt.Errorf("%s: %w (%s)", path, bounded.ErrNotRegular, bounded.Kind(mode)))
			return nil
		}
		w.files = append(w.files, filepath.Clean(path))
		return nil
	})
	if err != nil {
		return w, fmt.Errorf("data: image folder: %w", err)
	}
	return w, nil
}
