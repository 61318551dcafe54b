package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/internal/servetest"
	"github.com/bicyc/bicyc/internal/testmodel/small"
	"github.com/bicyc/bicyc/serve"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
)

// classFolder writes n Fashion-MNIST test images of each label as PNG files
// into root/<folder>/, after skipping the first skip of that label; folder
// names are the class names, or the label for names with a slash.
func classFolder(t *testing.T, root string, labels []int, skip, n int) {
	t.Helper()
	_, test := testModel(t)
	for _, y := range labels {
		name := data.FashionMNISTClasses[y]
		if strings.Contains(name, "/") {
			name = fmt.Sprint(y)
		}
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, i := range labelIndices(test, y, skip, n) {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d.png", i)), encodePNG(t, fashionImage(test, i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// labelIndices returns n test indices of label y after the first skip.
func labelIndices(d *data.Dataset, y, skip, n int) []int {
	var out []int
	for i, l := range d.Labels {
		if l != y {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if len(out) == n {
			break
		}
		out = append(out, i)
	}
	return out
}

// treeDigest hashes every path and file of dir.
func treeDigest(t *testing.T, dir string) [sha256.Size]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		fmt.Fprintf(h, "%s %x\n", path, sha256.Sum256(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// jsonRecords parses --json output.
func jsonRecords(t *testing.T, stdout string) []record {
	t.Helper()
	var out []record
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestProductionLoop runs the loop through the command: calibrate the test
// model on held-out images, classify known and new (Sandal) images with
// --collect-unknown, add Sandal from labelled images with add-classes, and
// classify Sandal images with the new model. The models it reads are never
// modified.
func TestProductionLoop(t *testing.T) {
	model, _ := testModel(t)
	before := treeDigest(t, model)
	root := t.TempDir()
	classFolder(t, filepath.Join(root, "heldout"), []int{0, 1, 2}, small.PerClass, 40)
	calibrated := filepath.Join(root, "v2")
	stdout, _, err := runCommand(t, nil, "calibrate", "--model", model, "--provider", "cpu", "--from", filepath.Join(root, "heldout"), "--out", calibrated)
	if err != nil || !strings.Contains(stdout, "calibrated on 120 images") {
		t.Fatalf("calibrate: %v\n%s", err, stdout)
	}

	classFolder(t, filepath.Join(root, "incoming"), []int{1, 5}, small.PerClass+40, 10)
	collected := filepath.Join(root, "unknown")
	stdout, stderr, err := runCommand(t, nil, "--model", calibrated, "--provider", "cpu", "--json",
		"--collect-unknown", collected, "--collect-max-files", "3", filepath.Join(root, "incoming"))
	if err != nil {
		t.Fatalf("classify: %v\n%s", err, stderr)
	}
	unknown := map[string]int{}
	for _, r := range jsonRecords(t, stdout) {
		class := filepath.Base(filepath.Dir(r.File))
		if r.Confidence <= 0 || r.Confidence > 1 || r.UnknownScore == nil || r.Unknown != (r.Collected != "" || strings.Contains(stderr, r.File)) {
			t.Errorf("record %+v", r)
		}
		if r.Unknown {
			unknown[class]++
		}
	}
	t.Logf("unknown answers by folder: %v", unknown)
	// The test model's random 4-dim features separate classes weakly, so
	// only the direction is checked: the new class is unknown more often.
	if unknown["Sandal"] <= unknown["Trouser"] || unknown["Sandal"]+unknown["Trouser"] < 4 {
		t.Errorf("unknown answers %v: want more Sandal than Trouser images unknown, 4 or more in all", unknown)
	}
	if files, _ := os.ReadDir(collected); len(files) != min(3, unknown["Sandal"]+unknown["Trouser"]) {
		t.Errorf("%d files collected, want the limit of 3", len(files))
	}
	if !strings.Contains(stderr, "not collected") || !strings.Contains(stderr, "collection is full") {
		t.Errorf("stderr does not say the collection is full:\n%s", stderr)
	}

	classFolder(t, filepath.Join(root, "labelled"), []int{5}, 0, 20)
	added := filepath.Join(root, "v3")
	stdout, _, err = runCommand(t, nil, "add-classes", "--model", calibrated, "--provider", "cpu", "--from", filepath.Join(root, "labelled"), "--out", added)
	if err != nil || !strings.Contains(stdout, `class 3 "Sandal" (task 3) from 20 images`) {
		t.Fatalf("add-classes: %v\n%s", err, stdout)
	}
	stdout, _, err = runCommand(t, nil, "--model", added, "--provider", "cpu", "--json", filepath.Join(root, "incoming", "Sandal"))
	if err != nil {
		t.Fatal(err)
	}
	sandal := 0
	for _, r := range jsonRecords(t, stdout) {
		if r.Predictions[0].Name == "Sandal" {
			sandal++
		}
	}
	if sandal < 8 {
		t.Errorf("the new model calls %d of 10 Sandal images Sandal", sandal)
	}
	if treeDigest(t, model) != before {
		t.Error("the original model changed")
	}
}

// TestAddClassesCommandErrors pins the command's refusals: each a clear
// error, no output directory, the model untouched.
func TestAddClassesCommandErrors(t *testing.T) {
	model, _ := testModel(t)
	before := treeDigest(t, model)
	root := t.TempDir()
	classFolder(t, filepath.Join(root, "few"), []int{5}, 0, author.MinAddImages-1)
	classFolder(t, filepath.Join(root, "dup"), []int{1}, 0, author.MinAddImages)
	classFolder(t, filepath.Join(root, "good"), []int{5}, 0, author.MinAddImages)
	classFolder(t, filepath.Join(root, "flat"), []int{5}, 0, 1)
	os.Rename(filepath.Join(root, "flat", "Sandal"), filepath.Join(root, "flat-sandal"))
	os.RemoveAll(filepath.Join(root, "flat"))
	os.Rename(filepath.Join(root, "flat-sandal"), filepath.Join(root, "flat"))
	occupied := filepath.Join(root, "occupied")
	os.MkdirAll(occupied, 0o755)
	os.WriteFile(filepath.Join(occupied, "notes.txt"), []byte("keep"), 0o644)
	for i, tc := range []struct {
		from, out, want string
	}{
		{"few", "", `class "Sandal": too few images for a class: 4 images, want at least 5`},
		{"dup", "", `duplicate class name: "Trouser" is already class 1 of the model`},
		{"flat", "", "1 image files directly in the folder: put each class's images in a sub-folder named after the class"},
		{"missing", "", "not a folder of class folders"},
		{"good", occupied, "--out: output directory is in the way: " + occupied + " exists and is not empty"},
		{"good", model, "--out: output directory is in the way: " + model + " is the model itself"},
	} {
		out := tc.out
		if out == "" {
			out = filepath.Join(root, fmt.Sprint("out", i))
		}
		_, _, err := runCommand(t, nil, "add-classes", "--model", model, "--provider", "cpu", "--from", filepath.Join(root, tc.from), "--out", out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want %q", i, err, tc.want)
		}
		if tc.out == "" {
			if _, err := os.Stat(out); err == nil {
				t.Errorf("case %d: %s was written", i, out)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(occupied, "notes.txt")); string(b) != "keep" {
		t.Error("the occupied output directory changed")
	}
	if treeDigest(t, model) != before {
		t.Error("the original model changed")
	}
}

// TestServeUnknownAndReload serves a calibrated model through a symlink
// with a threshold that makes every answer unknown: each is counted in
// /metrics and collected once per distinct image. The symlink is then
// swapped to the add-classes result and a reload serves the new class.
func TestServeUnknownAndReload(t *testing.T) {
	model, test := testModel(t)
	root := t.TempDir()
	classFolder(t, filepath.Join(root, "heldout"), []int{0, 1, 2}, small.PerClass, 20)
	classFolder(t, filepath.Join(root, "labelled"), []int{5}, 0, 20)
	v2, v3, link := filepath.Join(root, "v2"), filepath.Join(root, "v3"), filepath.Join(root, "current")
	if _, _, err := runCommand(t, nil, "calibrate", "--model", model, "--provider", "cpu", "--from", filepath.Join(root, "heldout"), "--out", v2); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("v2", link); err != nil {
		t.Fatal(err)
	}
	mo := &modelOptions{model: link, provider: "cpu", threads: 1, maxPixels: infer.DefaultMaxPixels, threshold: 1e-9}
	opts, err := mo.openOptions(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	collector, err := infer.NewCollector(filepath.Join(root, "unknown"), 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(context.Background(), serve.Config{Model: link, Options: opts, MaxBody: 1 << 20, MaxConcurrent: 2, QueueTimeout: time.Second, Collector: collector})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Public)
	defer ts.Close()
	admin := httptest.NewServer(s.Admin)
	defer admin.Close()

	sandal := encodePNG(t, fashionImage(test, labelIndices(test, 5, 30, 1)[0]))
	for i, body := range [][]byte{sandal, sandal, encodePNG(t, fashionImage(test, 0))} {
		if code, res := servetest.ClassifyPNG(t, ts.URL, body); code != 200 || !res.Unknown || res.Confidence <= 0 {
			t.Fatalf("request %d: %d %+v", i, code, res)
		}
	}
	_, metrics := servetest.GetAny(t, ts.URL+"/metrics")
	for _, want := range []string{"bicyc_infer_unknown_total 3", `bicyc_infer_unknown_collected_total{result="saved"} 2`, `bicyc_infer_unknown_collected_total{result="duplicate"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if files, _ := os.ReadDir(filepath.Join(root, "unknown")); len(files) != 2 {
		t.Errorf("%d images collected, want 2 distinct", len(files))
	}

	if _, _, err := runCommand(t, nil, "add-classes", "--model", link, "--provider", "cpu", "--from", filepath.Join(root, "labelled"), "--out", v3); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("v3", link+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link+".new", link); err != nil {
		t.Fatal(err)
	}
	if code, body := servetest.PostReload(t, admin.URL); code != 200 || !strings.Contains(body, `"classes":4`) {
		t.Fatalf("reload: %d %s", code, body)
	}
	if _, res := servetest.ClassifyPNG(t, ts.URL, sandal); res.Predictions[0].Name != "Sandal" {
		t.Errorf("after reload a Sandal image is %+v", res.Predictions)
	}
}
