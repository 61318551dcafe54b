package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/imaging"
)

// cifarRecords encodes records in the CIFAR binary format: the label bytes,
// then 3072 pixel bytes (R plane, G plane, B plane of 32x32). Image i has
// pixel value (i + channel) at every position of its channel plane, except
// that pixel (row 1, column 2) of the red plane is 200.
func cifarRecords(labels [][]byte) []byte {
	var out []byte
	for i, l := range labels {
		out = append(out, l...)
		for ch := range 3 {
			plane := make([]byte, 1024)
			for j := range plane {
				plane[j] = byte(i + ch)
			}
			if ch == 0 {
				plane[1*32+2] = 200
			}
			out = append(out, plane...)
		}
	}
	return out
}

// checkCIFARImage checks image i of ds against cifarRecords' pattern.
func checkCIFARImage(t *testing.T, ds *Dataset, i, pattern int) {
	t.Helper()
	img := ds.Image(i)
	for ch := range 3 {
		for j := range 1024 {
			want := byte(pattern + ch)
			if ch == 0 && j == 1*32+2 {
				want = 200
			}
			if img[ch*1024+j] != want {
				t.Fatalf("%s image %d: channel %d pixel %d is %d, want %d", ds.Name, i, ch, j, img[ch*1024+j], want)
			}
		}
	}
}

func TestLoadCIFAR10(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "cifar-10-batches-bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Batch b holds two images with labels b and 9-b.
	for b := 1; b <= 5; b++ {
		writeFile(t, filepath.Join(dir, "data_batch_"+string(rune('0'+b))+".bin"), cifarRecords([][]byte{{byte(b)}, {byte(9 - b)}}))
	}
	writeFile(t, filepath.Join(dir, "test_batch.bin"), cifarRecords([][]byte{{3}}))
	// Without batches.meta.txt the names are numbered.
	train, test, err := LoadCIFAR10(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(train.ClassNames, numberedClassNames(10)) {
		t.Fatalf("class names %q", train.ClassNames)
	}
	names := "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n"
	writeFile(t, filepath.Join(dir, "batches.meta.txt"), []byte(names))
	// The parent folder works too.
	train, test, err = LoadCIFAR10(parent)
	if err != nil {
		t.Fatal(err)
	}
	if train.Name != "cifar10-train" || train.Len() != 10 || train.Channels != 3 || train.Height != 32 || train.Width != 32 || train.Source != dir {
		t.Fatalf("train: %q %d images %dx%dx%d from %q", train.Name, train.Len(), train.Channels, train.Height, train.Width, train.Source)
	}
	if want := []int{1, 8, 2, 7, 3, 6, 4, 5, 5, 4}; !slices.Equal(train.Labels, want) {
		t.Errorf("train labels %v, want %v", train.Labels, want)
	}
	if test.Len() != 1 || test.Labels[0] != 3 || test.ClassNames[9] != "truck" || train.ClassNames[0] != "airplane" {
		t.Errorf("test %v %q, train names %q", test.Labels, test.ClassNames, train.ClassNames)
	}
	for i := range train.Len() {
		checkCIFARImage(t, train, i, i%2)
	}
	checkCIFARImage(t, test, 0, 0)
}

func TestLoadCIFAR100(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "train.bin"), cifarRecords([][]byte{{19, 99}, {0, 0}, {4, 37}}))
	writeFile(t, filepath.Join(dir, "test.bin"), cifarRecords([][]byte{{7, 55}}))
	var names []string
	for i := range 100 {
		names = append(names, "fine"+string(rune('A'+i%26))+strings.Repeat("x", i/26))
	}
	writeFile(t, filepath.Join(dir, "fine_label_names.txt"), []byte(strings.Join(names, "\r\n")))
	train, test, err := LoadCIFAR100(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(train.Labels, []int{99, 0, 37}) || !slices.Equal(test.Labels, []int{55}) || train.Name != "cifar100-train" {
		t.Fatalf("labels %v %v", train.Labels, test.Labels)
	}
	if !slices.Equal(train.ClassNames, names) || train.NumClasses() != 100 {
		t.Fatalf("class names %q", train.ClassNames)
	}
	for i := range 3 {
		checkCIFARImage(t, train, i, i)
	}
}

func TestLoadCIFARBadInput(t *testing.T) {
	type file struct{ name, content string }
	rec10 := func(labels ...byte) string {
		var ls [][]byte
		for _, l := range labels {
			ls = append(ls, []byte{l})
		}
		return string(cifarRecords(ls))
	}
	var cifar10 []file
	for b := 1; b <= 5; b++ {
		cifar10 = append(cifar10, file{"data_batch_" + string(rune('0'+b)) + ".bin", rec10(1)})
	}
	with := func(base []file, extra ...file) []file {
		out := slices.Clone(base)
		for _, e := range extra {
			out = slices.DeleteFunc(out, func(f file) bool { return f.name == e.name })
			if e.content != "<missing>" {
				out = append(out, e)
			}
		}
		return out
	}
	cases := []struct {
		name  string
		c100  bool
		files []file
		want  error
		msg   string
	}{
		{"missing test batch", false, cifar10, fs.ErrNotExist, "test_batch.bin"},
		{"missing batch 3", false, with(cifar10, file{"test_batch.bin", rec10(0)}, file{"data_batch_3.bin", "<missing>"}), fs.ErrNotExist, "data_batch_3.bin"},
		{"size not a multiple", false, with(cifar10, file{"test_batch.bin", rec10(0) + "x"}), imaging.ErrFormat, "3073-byte record"},
		{"empty batch", false, with(cifar10, file{"test_batch.bin", ""}), imaging.ErrFormat, "not a positive multiple"},
		{"label 10", false, with(cifar10, file{"test_batch.bin", rec10(0, 10)}), ErrLabelRange, "record 1 has label 10"},
		{"9 names", false, with(cifar10, file{"test_batch.bin", rec10(0)}, file{"batches.meta.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\n"}), imaging.ErrFormat, "9 class names, want 10"},
		{"cifar100 record size", true, []file{{"train.bin", rec10(1)}, {"test.bin", rec10(1)}}, imaging.ErrFormat, "3074-byte record"},
		{"cifar100 fine label 100", true, []file{{"train.bin", string(cifarRecords([][]byte{{1, 100}}))}, {"test.bin", string(cifarRecords([][]byte{{1, 1}}))}}, ErrLabelRange, "label 100"},
		{"cifar100 coarse label 20", true, []file{{"train.bin", string(cifarRecords([][]byte{{20, 1}}))}, {"test.bin", string(cifarRecords([][]byte{{1, 1}}))}}, ErrLabelRange, "coarse label 20"},
		{"cifar100 missing test", true, []file{{"train.bin", string(cifarRecords([][]byte{{1, 1}}))}}, fs.ErrNotExist, "test.bin"},
	}
	for i, c := range cases {
		dir := t.TempDir()
		for _, f := range c.files {
			writeFile(t, filepath.Join(dir, f.name), []byte(f.content))
		}
		load := LoadCIFAR10
		if c.c100 {
			load = LoadCIFAR100
		}
		_, _, err := load(dir)
		t.Logf("case %d (%s): %v", i, c.name, err)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), dir) {
			t.Errorf("case %d (%s): got %v, want %v mentioning %q and the file", i, c.name, err, c.want, c.msg)
		}
	}
}
