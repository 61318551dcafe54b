package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/internal/imagetest"
	"github.com/bicyc/bicyc/names"
)

// TestLoadFoldersJudgedWhole: a training folder with several unreadable
// images is refused in one error naming every one of them (issue 33,
// row 2), and with SkipUnreadable the rest load, the others named in
// Skipped. Past 20 problems the message counts the rest.
func TestLoadFoldersJudgedWhole(t *testing.T) {
	p := imaging.Preprocess{Channels: 3, Height: 8, Width: 8}
	root := t.TempDir()
	for _, split := range []string{"train", "test"} {
		for c, class := range []string{"a", "b"} {
			for i := range 4 {
				imagetest.WritePNG(t, filepath.Join(root, split, class, fmt.Sprintf("%d.png", i)), imagetest.Gradient(8, 8, 10*c+i))
			}
		}
	}
	bad := []string{
		filepath.Join(root, "train", "a", "x.png"),
		filepath.Join(root, "train", "b", "y.jpg"),
		filepath.Join(root, "train", "b", "z.png"),
	}
	for _, path := range bad {
		writeFile(t, path, []byte("not an image"))
	}
	train, test := filepath.Join(root, "train"), filepath.Join(root, "test")
	_, _, err := LoadFolders(train, test, p, FolderOptions{})
	t.Logf("%v", err)
	if !errors.Is(err, imaging.ErrFormat) || !strings.Contains(err.Error(), "3 of 11 image files are unreadable") {
		t.Fatalf("error %v, want ErrFormat counting 3 of 11 unreadable files", err)
	}
	for _, path := range bad {
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error does not name %s", path)
		}
	}
	if !strings.Contains(err.Error(), "skip_unreadable") {
		t.Errorf("error %v does not say how to train on the rest", err)
	}

	ds, _, err := LoadFolders(train, test, p, FolderOptions{SkipUnreadable: true, LoadSide: 8})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 8 || ds.Photos.Len() != 8 || fmt.Sprint(ds.ClassCounts()) != "[4 4]" {
		t.Errorf("kept %d images (%d photos), counts %v; want 8, 4 per class", ds.Len(), ds.Photos.Len(), ds.ClassCounts())
	}
	if got := strings.Join(ds.Skipped, "\n"); strings.Count(got, "unreadable, left out") != 3 {
		t.Errorf("skipped %q, want the 3 unreadable files", ds.Skipped)
	}
	// The kept images are the readable ones, in order, with their labels.
	want, err := LoadImageFolder(filepath.Join(root, "test"), p)
	if err != nil {
		t.Fatal(err)
	}
	if string(ds.Pixels) != string(want.Pixels) || fmt.Sprint(ds.Labels) != fmt.Sprint(want.Labels) {
		t.Error("the images kept differ from the readable images")
	}

	// A class left without images is refused even when skipping.
	for i := range 4 {
		writeFile(t, filepath.Join(root, "train", "a", fmt.Sprintf("%d.png", i)), []byte("broken"))
	}
	if _, _, err := LoadFolders(train, test, p, FolderOptions{SkipUnreadable: true}); !errors.Is(err, ErrEmptyClass) {
		t.Errorf("class of unreadable images: %v, want ErrEmptyClass", err)
	}
	// Many problems: 20 named, the rest counted.
	for i := range 30 {
		writeFile(t, filepath.Join(root, "train", "b", fmt.Sprintf("bad%02d.png", i)), []byte("broken"))
	}
	_, _, err = LoadFolders(train, test, p, FolderOptions{})
	if err == nil || !strings.Contains(err.Error(), "... and 17 more") || strings.Count(err.Error(), "\n") != 21 {
		t.Errorf("37 unreadable files: %v; want 20 named and 17 counted", err)
	}
}

// TestListClassFoldersRule pins the one rule for links, hidden and odd
// names (issue 33, rows 7 and 8): a link to a class folder is a class, a
// link to an image an image; hidden entries and other files are passed
// over and reported; names out of bounds are refused, all at once.
func TestListClassFoldersRule(t *testing.T) {
	root := t.TempDir()
	elsewhere := filepath.Join(root, "elsewhere")
	for i := range 3 {
		imagetest.WritePNG(t, filepath.Join(elsewhere, "shoes", fmt.Sprintf("%d.png", i)), imagetest.Gradient(8, 8, i))
	}
	d := filepath.Join(root, "d")
	imagetest.WritePNG(t, filepath.Join(d, "plain", "1.png"), imagetest.Gradient(8, 8, 7))
	writeFile(t, filepath.Join(d, "plain", ".DS_Store"), []byte("x"))
	writeFile(t, filepath.Join(d, "plain", "notes.txt"), []byte("x"))
	must(t, os.Symlink(filepath.Join(elsewhere, "shoes"), filepath.Join(d, "linked")))
	must(t, os.Symlink(filepath.Join(elsewhere, "shoes", "0.png"), filepath.Join(d, "plain", "link.png")))
	must(t, os.Symlink(filepath.Join(elsewhere, "shoes"), filepath.Join(d, "plain", "sub")))
	imagetest.WritePNG(t, filepath.Join(d, "...", "1.png"), imagetest.Gradient(8, 8, 8))
	writeFile(t, filepath.Join(d, "README.md"), []byte("x"))

	classes, skipped, err := ListClassFolders(d)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(classes)
	want := fmt.Sprintf("[{linked [%s %s %s]} {plain [%s %s]}]",
		filepath.Join(d, "linked", "0.png"), filepath.Join(d, "linked", "1.png"), filepath.Join(d, "linked", "2.png"),
		filepath.Join(d, "plain", "1.png"), filepath.Join(d, "plain", "link.png"))
	if got != want {
		t.Errorf("classes\n %s\nwant\n %s", got, want)
	}
	notes := strings.Join(skipped, "\n")
	for _, w := range []string{
		filepath.Join(d, "...") + `: hidden (name starts with "."), not read`,
		filepath.Join(d, "README.md") + ": not a folder",
		filepath.Join(d, "plain", "sub") + ": a link to a folder inside a class folder, not followed",
		filepath.Join(d, "plain") + `: 1 hidden entries`,
		filepath.Join(d, "plain") + ": 1 files without an image extension not read (first: " + filepath.Join(d, "plain", "notes.txt"),
	} {
		if !strings.Contains(notes, w) {
			t.Errorf("skipped lacks %q:\n%s", w, notes)
		}
	}

	// Names out of bounds, every one named in one error.
	bad := filepath.Join(root, "bad")
	for _, name := range []string{"new\nline", " lead", "Cl\xffass", "tab\t"} {
		imagetest.WritePNG(t, filepath.Join(bad, name, "1.png"), imagetest.Gradient(8, 8, 1))
	}
	imagetest.WritePNG(t, filepath.Join(bad, "fine", "1.png"), imagetest.Gradient(8, 8, 1))
	_, _, err = ListClassFolders(bad)
	t.Logf("%v", err)
	if !errors.Is(err, names.ErrInvalid) || !strings.Contains(err.Error(), "4 problems with class folders") {
		t.Errorf("error %v, want names.ErrInvalid for 4 folders", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestClassFolderNamesNFC: issue 42, row 5. A class is named after its
// folder in Unicode NFC form, so a folder written in NFD (as macOS
// writes names) gets the same class name as one written in NFC.
func TestClassFolderNamesNFC(t *testing.T) {
	root := t.TempDir()
	imagetest.WritePNG(t, filepath.Join(root, "cafe\u0301", "0.png"), imagetest.Gradient(8, 8, 1))
	classes, _, err := ListClassFolders(root)
	if err != nil || len(classes) != 1 || classes[0].Name != "caf\u00e9" {
		t.Fatalf("classes %+v, %v; want one named café in NFC", classes, err)
	}
}
