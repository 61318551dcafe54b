package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dataset layouts ConvertLayout reads.
const (
	// LayoutTinyImageNet is tiny-imagenet-200 as distributed:
	// train/<wnid>/images/*.JPEG and val/images/*.JPEG labelled by
	// val/val_annotations.txt (file, wnid, box, tab-separated); the
	// unlabelled test/ is ignored. Its val set becomes test/.
	LayoutTinyImageNet = "tinyimagenet"
	// LayoutCUB200 is CUB_200_2011 as distributed: images/<class>/<file>,
	// images.txt ("<id> <class>/<file>") and train_test_split.txt
	// ("<id> <1 train, 0 test>").
	LayoutCUB200 = "cub200"
)

// ErrLayout marks a dataset directory that is not in the layout it was
// said to be in (a missing or malformed index file, an image it lists that
// is missing).
var ErrLayout = errors.New("unexpected dataset layout")

// ConvertLayout rewrites the dataset at src, in one of the Layout
// formats, into the image-folder layout LoadImageFolders reads:
//
//	dst/train/<class>/<file>
//	dst/test/<class>/<file>
//
// Class folders are named after the dataset's own (TinyImageNet's wnids,
// CUB-200's "001.Black_footed_Albatross"), so labels follow their sorted
// order. Files are hard-linked when src and dst share a file system and
// copied otherwise; src is never modified. dst must not exist or be empty.
// The index files are read and checked before anything is written; an
// image missing on disk stops the conversion part way (remove dst before
// retrying). It returns the number of training and test images written.
// Errors name
// the file and line at fault and wrap ErrLayout, or fs.ErrNotExist for a
// missing index file.
func ConvertLayout(layout, src, dst string) (train, test int, err error) {
	var pairs []layoutFile
	switch layout {
	case LayoutTinyImageNet:
		pairs, err = tinyImageNetFiles(src)
	case LayoutCUB200:
		pairs, err = cub200Files(src)
	default:
		return 0, 0, fmt.Errorf("data: %w: layout %q, want %q or %q", ErrLayout, layout, LayoutTinyImageNet, LayoutCUB200)
	}
	if err != nil {
		return 0, 0, err
	}
	if entries, err := os.ReadDir(dst); err == nil && len(entries) > 0 {
		return 0, 0, fmt.Errorf("data: convert into %s: the directory is not empty", dst)
	}
	for _, f := range pairs {
		to := filepath.Join(dst, f.split, f.class, filepath.Base(f.path))
		if err := linkOrCopy(f.path, to); err != nil {
			return train, test, fmt.Errorf("data: convert %s: %w", f.path, err)
		}
		if f.split == "train" {
			train++
		} else {
			test++
		}
	}
	return train, test, nil
}

// layoutFile is one image of a dataset being converted.
type layoutFile struct {
	path, split, class string
}

// tinyImageNetFiles lists TinyImageNet's training images by their class
// folder and its validation images by val_annotations.txt.
func tinyImageNetFiles(src string) ([]layoutFile, error) {
	folders, _, err := ListClassFolders(filepath.Join(src, "train"))
	if err != nil {
		return nil, err
	}
	var out []layoutFile
	var classes []string
	for _, class := range folders {
		classes = append(classes, class.Name)
		for _, f := range class.Files {
			out = append(out, layoutFile{f, "train", class.Name})
		}
	}
	annotations := filepath.Join(src, "val", "val_annotations.txt")
	err = readLines(annotations, func(line int, fields []string) error {
		if len(fields) < 2 {
			return fmt.Errorf("want <file> <wnid> ..., got %d fields", len(fields))
		}
		if !slices.Contains(classes, fields[1]) {
			return fmt.Errorf("class %q has no train/%s folder", fields[1], fields[1])
		}
		out = append(out, layoutFile{filepath.Join(src, "val", "images", filepath.Base(fields[0])), "test", fields[1]})
		return nil
	})
	return out, err
}

// cub200Files lists CUB-200-2011's images by images.txt, split by
// train_test_split.txt.
func cub200Files(src string) ([]layoutFile, error) {
	paths := map[string]string{}
	var ids []string
	err := readLines(filepath.Join(src, "images.txt"), func(_ int, fields []string) error {
		if len(fields) != 2 || strings.Count(fields[1], "/") != 1 {
			return fmt.Errorf("want <id> <class>/<file>, got %q", strings.Join(fields, " "))
		}
		if _, dup := paths[fields[0]]; dup {
			return fmt.Errorf("image id %s listed twice", fields[0])
		}
		paths[fields[0]] = fields[1]
		ids = append(ids, fields[0])
		return nil
	})
	if err != nil {
		return nil, err
	}
	split := map[string]string{}
	splitFile := filepath.Join(src, "train_test_split.txt")
	err = readLines(splitFile, func(_ int, fields []string) error {
		if len(fields) != 2 || (fields[1] != "0" && fields[1] != "1") {
			return fmt.Errorf("want <id> <0 or 1>, got %q", strings.Join(fields, " "))
		}
		if _, ok := paths[fields[0]]; !ok {
			return fmt.Errorf("image id %s is not in images.txt", fields[0])
		}
		split[fields[0]] = map[string]string{"1": "train", "0": "test"}[fields[1]]
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]layoutFile, 0, len(ids))
	for _, id := range ids {
		s, ok := split[id]
		if !ok {
			return nil, fmt.Errorf("data: %s: %w: image id %s (images.txt) has no split", splitFile, ErrLayout, id)
		}
		rel := paths[id]
		out = append(out, layoutFile{filepath.Join(src, "images", filepath.FromSlash(rel)), s, filepath.Dir(rel)})
	}
	return out, nil
}

// readLines calls fn with the whitespace-separated fields of every
// non-empty line of path; an error of fn is wrapped with the file, the
// line number and ErrLayout.
func readLines(path string, fn func(line int, fields []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if err := fn(line, fields); err != nil {
			return fmt.Errorf("data: %s:%d: %w: %w", path, line, ErrLayout, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("data: %s: %w", path, err)
	}
	return nil
}

// linkOrCopy makes to a hard link of from, or a copy where linking fails
// (another file system), creating parent folders. A missing from wraps
// ErrLayout.
func linkOrCopy(from, to string) error {
	if _, err := os.Stat(from); err != nil {
		return fmt.Errorf("%w: an image the index lists: %w", ErrLayout, err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if os.Link(from, to) == nil {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
