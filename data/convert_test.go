package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/internal/imagetest"
)

// writeTinyImageNet writes a 3-class tiny-imagenet-200 tree in the layout
// of the distributed zip: wnids.txt, train/<wnid>/images/*.JPEG with a
// boxes file, val/images/*.JPEG with val_annotations.txt (tab-separated,
// with boxes), and an unlabelled test/images/.
func writeTinyImageNet(t *testing.T, root string) {
	wnids := []string{"n01443537", "n01629819", "n01641577"}
	writeFile(t, filepath.Join(root, "wnids.txt"), []byte(strings.Join(wnids, "\n")+"\n"))
	var ann strings.Builder
	for c, wnid := range wnids {
		var boxes strings.Builder
		for i := range 4 {
			name := fmt.Sprintf("%s_%d.JPEG", wnid, i)
			imagetest.WriteJPEG(t, filepath.Join(root, "train", wnid, "images", name), imagetest.Gradient(64, 64, c*10+i))
			fmt.Fprintf(&boxes, "%s\t0\t0\t63\t63\n", name)
		}
		writeFile(t, filepath.Join(root, "train", wnid, wnid+"_boxes.txt"), []byte(boxes.String()))
		for i := range 2 {
			name := fmt.Sprintf("val_%d.JPEG", 2*c+i)
			imagetest.WriteJPEG(t, filepath.Join(root, "val", "images", name), imagetest.Gradient(64, 64, 100+2*c+i))
			fmt.Fprintf(&ann, "%s\t%s\t1\t2\t50\t60\n", name, wnid)
		}
	}
	writeFile(t, filepath.Join(root, "val", "val_annotations.txt"), []byte(ann.String()))
	imagetest.WriteJPEG(t, filepath.Join(root, "test", "images", "test_0.JPEG"), imagetest.Gradient(64, 64, 7))
}

// writeCUB200 writes a 2-class CUB_200_2011 tree: images/<class>/*.jpg of
// varied sizes, images.txt and train_test_split.txt.
func writeCUB200(t *testing.T, root string) {
	classes := []string{"001.Black_footed_Albatross", "002.Laysan_Albatross"}
	var images, split strings.Builder
	id := 1
	for c, class := range classes {
		for i := range 5 {
			name := fmt.Sprintf("%s_%04d_%d.jpg", strings.TrimPrefix(class, class[:4]), i, 700000+id)
			imagetest.WriteJPEG(t, filepath.Join(root, "images", class, name), imagetest.Gradient(50+10*i, 40+7*c, id))
			fmt.Fprintf(&images, "%d %s/%s\n", id, class, name)
			fmt.Fprintf(&split, "%d %d\n", id, map[bool]int{true: 1, false: 0}[i < 3])
			id++
		}
	}
	writeFile(t, filepath.Join(root, "images.txt"), []byte(images.String()))
	writeFile(t, filepath.Join(root, "train_test_split.txt"), []byte(split.String()))
	writeFile(t, filepath.Join(root, "classes.txt"), []byte("1 "+classes[0]+"\n2 "+classes[1]+"\n"))
}

// TestConvertLayouts converts both layouts and loads the result as image
// folders: every image lands in its class and split.
func TestConvertLayouts(t *testing.T) {
	p := imaging.Preprocess{Channels: 3, Height: 32, Width: 32, ResizeMode: arch.CenterCrop, ResizeShorter: 36}
	for i, c := range []struct {
		layout      string
		write       func(*testing.T, string)
		train, test int
		classes     []string
		testCounts  []int
	}{
		{LayoutTinyImageNet, writeTinyImageNet, 12, 6, []string{"n01443537", "n01629819", "n01641577"}, []int{2, 2, 2}},
		{LayoutCUB200, writeCUB200, 6, 4, []string{"001.Black_footed_Albatross", "002.Laysan_Albatross"}, []int{2, 2}},
	} {
		src, dst := t.TempDir(), filepath.Join(t.TempDir(), "out")
		c.write(t, src)
		train, test, err := ConvertLayout(c.layout, src, dst)
		if err != nil || train != c.train || test != c.test {
			t.Fatalf("case %d: converted %d train, %d test images (%v), want %d and %d", i, train, test, err, c.train, c.test)
		}
		tr, te, err := LoadImageFolders(filepath.Join(dst, "train"), filepath.Join(dst, "test"), p)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if tr.Len() != c.train || te.Len() != c.test || !slices.Equal(tr.ClassNames, c.classes) || !slices.Equal(te.ClassCounts(), c.testCounts) {
			t.Errorf("case %d: loaded %d/%d images, classes %v, test counts %v", i, tr.Len(), te.Len(), tr.ClassNames, te.ClassCounts())
		}
		if _, _, err := ConvertLayout(c.layout, src, dst); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("case %d: converting into a full directory: %v", i, err)
		}
	}
	// The TinyImageNet val image val_3 is annotated with the second wnid.
	src, dst := t.TempDir(), t.TempDir()
	writeTinyImageNet(t, src)
	if _, _, err := ConvertLayout(LayoutTinyImageNet, src, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "test", "n01629819", "val_3.JPEG")); err != nil {
		t.Errorf("val_3.JPEG is not in its annotated class: %v", err)
	}
}

// TestConvertLayoutErrors: each malformed index names its file and line.
func TestConvertLayoutErrors(t *testing.T) {
	cases := []struct {
		layout  string
		write   func(*testing.T, string)
		breakIt func(t *testing.T, root string)
		want    []string
		is      error
	}{
		{LayoutTinyImageNet, writeTinyImageNet, func(t *testing.T, root string) {
			appendLine(t, filepath.Join(root, "val", "val_annotations.txt"), "val_99.JPEG\tn99999999\t0\t0\t1\t1")
		}, []string{"val_annotations.txt:7", `class "n99999999"`}, ErrLayout},
		{LayoutTinyImageNet, writeTinyImageNet, func(t *testing.T, root string) {
			appendLine(t, filepath.Join(root, "val", "val_annotations.txt"), "val_99.JPEG")
		}, []string{"val_annotations.txt:7", "1 fields"}, ErrLayout},
		{LayoutTinyImageNet, writeTinyImageNet, func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "val", "images", "val_4.JPEG"))
		}, []string{"val_4.JPEG", "an image the index lists"}, ErrLayout},
		{LayoutTinyImageNet, writeTinyImageNet, func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "val", "val_annotations.txt"))
		}, []string{"val_annotations.txt"}, fs.ErrNotExist},
		{LayoutCUB200, writeCUB200, func(t *testing.T, root string) {
			appendLine(t, filepath.Join(root, "images.txt"), "11 no-class-folder.jpg")
		}, []string{"images.txt:11", "want <id> <class>/<file>"}, ErrLayout},
		{LayoutCUB200, writeCUB200, func(t *testing.T, root string) {
			appendLine(t, filepath.Join(root, "images.txt"), "3 001.Black_footed_Albatross/x.jpg")
		}, []string{"images.txt:11", "image id 3 listed twice"}, ErrLayout},
		{LayoutCUB200, writeCUB200, func(t *testing.T, root string) {
			appendLine(t, filepath.Join(root, "train_test_split.txt"), "10 2")
		}, []string{"train_test_split.txt:11", "want <id> <0 or 1>"}, ErrLayout},
		{LayoutCUB200, writeCUB200, func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "train_test_split.txt"), []byte("1 1\n"))
		}, []string{"train_test_split.txt", "image id 2 (images.txt) has no split"}, ErrLayout},
		{"imagenet", writeCUB200, func(*testing.T, string) {}, []string{`layout "imagenet"`}, ErrLayout},
	}
	for i, c := range cases {
		src := t.TempDir()
		c.write(t, src)
		c.breakIt(t, src)
		_, _, err := ConvertLayout(c.layout, src, filepath.Join(t.TempDir(), "out"))
		if !errors.Is(err, c.is) {
			t.Errorf("case %d: got %v, want %v", i, err, c.is)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("case %d: error %q does not mention %q", i, err, w)
			}
		}
	}
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}
