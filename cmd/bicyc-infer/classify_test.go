package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/infer"
)

// runCommand runs bicyc-infer with args and returns stdout, stderr and the
// error Execute returned.
func runCommand(t *testing.T, stdin []byte, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := newRootCmd(bytes.NewReader(stdin), &stdout, &stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return stdout.String(), stderr.String(), err
}

// imageTree writes real Fashion-MNIST images in several formats, a corrupt
// PNG and a text file under a new directory, and returns the directory and
// the images by path.
func imageTree(t *testing.T) (string, map[string]image.Image) {
	t.Helper()
	_, test := testModel(t)
	dir := t.TempDir()
	imgs := map[string]image.Image{
		filepath.Join(dir, "a.png"):        fashionImage(test, 0),
		filepath.Join(dir, "sub", "b.jpg"): fashionImage(test, 1),
	}
	write := func(path string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a.png"), encodePNG(t, imgs[filepath.Join(dir, "a.png")]))
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, imgs[filepath.Join(dir, "sub", "b.jpg")], &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, "sub", "b.jpg"), jpg.Bytes())
	write(filepath.Join(dir, "corrupt.png"), encodePNG(t, fashionImage(test, 2))[:100])
	write(filepath.Join(dir, "notes.txt"), []byte("not an image"))
	return dir, imgs
}

func TestClassifyTable(t *testing.T) {
	model, test := testModel(t)
	dir, imgs := imageTree(t)
	stdinImg := fashionImage(test, 3)
	missing := filepath.Join(dir, "missing.png")
	stdout, stderr, err := runCommand(t, encodePNG(t, stdinImg), "--model", model, "--provider", "cpu", "--batch", "2", dir, missing, "-")
	if err == nil || err.Error() != "2 of 5 images failed" {
		t.Errorf("error %v, want 2 of 5 images failed", err)
	}
	// Errors: one line each, naming the file, in stderr.
	for _, want := range []string{
		filepath.Join(dir, "corrupt.png") + ": truncated or corrupt png image",
		missing + ": no such file or directory",
	} {
		if !strings.Contains(stderr, "bicyc-infer: "+want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if strings.Contains(stdout+stderr, "notes.txt") {
		t.Errorf("notes.txt was not skipped:\n%s%s", stdout, stderr)
	}

	c, err := infer.Open(context.Background(), model, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 1+3*c.TopK() || !strings.HasPrefix(lines[0], "FILE") {
		t.Fatalf("stdout has %d lines, want a header and %d rows:\n%s", len(lines), 3*c.TopK(), stdout)
	}
	row := 1
	for i, file := range []string{filepath.Join(dir, "a.png"), filepath.Join(dir, "sub", "b.jpg"), "-"} {
		img := stdinImg
		if file != "-" {
			img = imgs[file]
		}
		want, err := c.Classify(context.Background(), img)
		if err != nil {
			t.Fatal(err)
		}
		for rank, p := range want.Predictions {
			fields := strings.Fields(lines[row])
			got := strings.Join(fields, " ")
			// No calibration: no probability, no known/unknown answer.
			exp := fmt.Sprintf("%s %d %d %s %d %.5g -", file, rank+1, p.ClassID, p.Name, p.Task, p.Distance)
			if rank == 0 {
				exp += " -"
			}
			if file == filepath.Join(dir, "sub", "b.jpg") {
				// JPEG is lossy: compare everything but the distance.
				got, exp = strings.Join(fields[:5], " "), strings.Join(strings.Fields(exp)[:5], " ")
			}
			if got != exp {
				t.Errorf("case %d row %d: %q, want %q", i, row, got, exp)
			}
			row++
		}
	}
	t.Logf("stdout:\n%sstderr:\n%s", stdout, stderr)
	// Columns line up: every row pads the file name to the longest one.
	width := len(missing)
	for i, line := range lines {
		rank := ""
		if len(line) >= width+6 && line[width:width+2] == "  " {
			rank = strings.TrimSpace(line[width+2 : width+6])
		}
		if _, err := strconv.Atoi(rank); err != nil && (i > 0 || rank != "RANK") {
			t.Errorf("line %d %q is not aligned at column %d", i, line, width)
		}
	}
}

func TestClassifyJSON(t *testing.T) {
	model, _ := testModel(t)
	dir, _ := imageTree(t)
	stdout, stderr, err := runCommand(t, nil, "--model", model, "--provider", "cpu", "--json", "--top-k", "3", dir)
	if err == nil {
		t.Error("no error for the corrupt file")
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing (errors are JSON records)", stderr)
	}
	var records []record
	for i, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		records = append(records, r)
	}
	want := []string{"a.png", "corrupt.png", filepath.Join("sub", "b.jpg")}
	if len(records) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(records), len(want), stdout)
	}
	for i, r := range records {
		if r.File != filepath.Join(dir, want[i]) {
			t.Errorf("record %d: file %q, want %q", i, r.File, want[i])
		}
		isCorrupt := want[i] == "corrupt.png"
		if isCorrupt != (r.Error != "") || (!isCorrupt && len(r.Predictions) != 3) {
			t.Errorf("record %d: %+v", i, r)
		}
	}
}

func TestClassifyEnvironment(t *testing.T) {
	model, _ := testModel(t)
	dir, _ := imageTree(t)
	file := filepath.Join(dir, "a.png")
	base := map[string]string{"BICYC_MODEL": model, "BICYC_PROVIDER": "cpu", "BICYC_TOP_K": "1"}
	cases := []struct {
		env      map[string]string // on top of base
		args     []string
		rows     int
		errorHas string
	}{
		{nil, []string{file}, 1, ""},
		{nil, []string{"--top-k", "3", file}, 3, ""},
		{map[string]string{"BICYC_INFER_THREADS": "many"}, []string{file}, 0, `BICYC_INFER_THREADS="many"`},
		{map[string]string{"BICYC_PROVIDER": "gpu"}, []string{file}, 0, `unknown execution provider "gpu"`},
		{map[string]string{"BICYC_MODEL": ""}, []string{file}, 0, "no model: pass --model DIR or set BICYC_MODEL"},
		{nil, nil, 0, "no images"},
		{nil, []string{"--batch", "0", file}, 0, "--batch 0"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint("case", i), func(t *testing.T) {
			for k, v := range base {
				t.Setenv(k, v)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			stdout, _, err := runCommand(t, nil, c.args...)
			switch {
			case c.errorHas != "" && (err == nil || !strings.Contains(err.Error(), c.errorHas)):
				t.Errorf("case %d: error %v, want %q", i, err, c.errorHas)
			case c.errorHas == "" && err != nil:
				t.Errorf("case %d: %v", i, err)
			case c.errorHas == "" && strings.Count(stdout, "\n") != 1+c.rows:
				t.Errorf("case %d: want %d rows:\n%s", i, c.rows, stdout)
			}
		})
	}
}

// TestNoGorgonia enforces that the inference side never links the training
// engine, nor the ONNX reader of pretrained imports, nor the training models
// and their GPU path (models/..., CUDA loaded at run time); and that the runtime
// package services embed (infer) links no model authoring either: neither
// the ONNX writer (export, its generated export/onnxpb, protobuf) nor
// package author, which bicyc-infer's add-classes and calibrate use.
func TestNoGorgonia(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	for _, pkg := range deps(".") {
		if strings.HasPrefix(pkg, "gorgonia.org/") || strings.HasPrefix(pkg, "github.com/owulveryck/onnx-go") ||
			pkg == "github.com/bicyc/bicyc/pretrained" || strings.HasPrefix(pkg, "github.com/bicyc/bicyc/models") {
			t.Errorf("bicyc-infer links %s", pkg)
		}
	}
	runtime := deps("github.com/bicyc/bicyc/infer")
	if len(runtime) < 10 {
		t.Fatalf("go list -deps infer: %q", runtime)
	}
	for _, pkg := range runtime {
		if strings.HasPrefix(pkg, "gorgonia.org/") || strings.HasPrefix(pkg, "google.golang.org/protobuf") ||
			strings.HasPrefix(pkg, "github.com/bicyc/bicyc/export") || pkg == "github.com/bicyc/bicyc/author" ||
			strings.HasPrefix(pkg, "github.com/bicyc/bicyc/models") {
			t.Errorf("package infer links %s", pkg)
		}
	}
}
