package infer

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/safetensors"
)

// openCPU opens a test bundle on the CPU provider without the auto log line.
func openCPU(t testing.TB, dir string, opts ...Option) *Classifier {
	t.Helper()
	c, err := Open(context.Background(), dir, append([]Option{WithProvider(ProviderCPU), WithLog(nil)}, opts...)...)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// heldOut returns n test-set indices per class that the prototypes were not
// estimated from.
func heldOut(f *fixture, n int) []int {
	count := make([]int, f.test.NumClasses())
	var out []int
	for i, y := range f.test.Labels {
		count[y]++
		if count[y] > fixturePerClass && count[y] <= fixturePerClass+n {
			out = append(out, i)
		}
	}
	return out
}

// TestClassifyMatchesReference classifies held-out Fashion-MNIST images and
// checks model.onnx's distances against gauss.Classifier.Scores on the
// backbone features from Embed (the fused graph against the trainer's own
// scorer), the ranking and labels of every Result, and that accuracy is far
// above chance.
func TestClassifyMatchesReference(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	idx := heldOut(f, 20)
	imgs := make([]image.Image, len(idx))
	for i, j := range idx {
		imgs[i] = fashionImage(f.test, j)
	}
	results, err := c.ClassifyBatch(context.Background(), imgs)
	if err != nil {
		t.Fatal(err)
	}
	features, err := c.Embed(context.Background(), imgs)
	if err != nil {
		t.Fatal(err)
	}
	flat := make([]float32, 0, len(features)*fixtureFeatureDim)
	for _, row := range features {
		flat = append(flat, row...)
	}
	k := len(c.Classes())
	want := f.reference.Scores(flat, len(features))

	correct := 0
	var worst float64
	for i, r := range results {
		if len(r.Predictions) != fixtureTopK {
			t.Fatalf("image %d: %d predictions, want top-%d", i, len(r.Predictions), fixtureTopK)
		}
		for rank, p := range r.Predictions {
			cls := c.Classes()[p.ClassID] // IDs are 0..9 in column order here
			if p.Name != cls.Name || p.Task != cls.Task || p.Task != p.ClassID/5+1 {
				t.Fatalf("image %d rank %d: %+v does not match class %+v", i, rank, p, cls)
			}
			ref := float64(want[i*k+p.ClassID])
			worst = max(worst, math.Abs(float64(p.Distance)-ref)/max(1, math.Abs(ref)))
			if rank > 0 && p.Distance < r.Predictions[rank-1].Distance {
				t.Fatalf("image %d: predictions not sorted: %+v", i, r.Predictions)
			}
		}
		// The best class is the reference's arg-min.
		best := 0
		for j := range k {
			if want[i*k+j] < want[i*k+best] {
				best = j
			}
		}
		if got := r.Best().ClassID; got != best && want[i*k+got] != want[i*k+best] {
			t.Errorf("image %d: best class %d, reference %d", i, got, best)
		}
		if r.Best().ClassID == f.test.Labels[idx[i]] {
			correct++
		}
	}
	if worst > 1e-3 {
		t.Errorf("distances differ from gauss.Classifier.Scores by up to %.2g (relative), want <= 1e-3", worst)
	}
	acc := float64(correct) / float64(len(results))
	t.Logf("%d held-out images: accuracy %.3f, worst relative distance error %.2g", len(results), acc, worst)
	if acc < 0.3 {
		t.Errorf("accuracy %.3f on 10 classes, want well above chance (>= 0.3)", acc)
	}
}

// TestModelFeaturesMatchBackbone: a model directory written since
// bundle.Manifest.ModelFeatures has model.onnx output the feature too, and
// it equals backbone.onnx's (Embed), so an unknown score that reads the
// feature runs the backbone once.
func TestModelFeaturesMatchBackbone(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	if !c.modelFeatures {
		t.Fatal("the fixture's model.onnx does not output the feature (manifest model_features false)")
	}
	idx := heldOut(f, 10)
	inputs := make([]Input, len(idx))
	for i, j := range idx {
		var err error
		if inputs[i], err = c.Prepare(fashionImage(f.test, j)); err != nil {
			t.Fatal(err)
		}
	}
	batch, shape, err := c.stack(inputs)
	if err != nil {
		t.Fatal(err)
	}
	_, z, err := c.runModel(context.Background(), batch, shape)
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.EmbedInputs(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	s := fixtureFeatureDim
	var worst float64
	for i, row := range want {
		for j, v := range row {
			worst = max(worst, math.Abs(float64(z[i*s+j]-v))/max(1e-6, math.Abs(float64(v))))
		}
	}
	t.Logf("%d images: model.onnx features within %.3g relative of backbone.onnx's", len(want), worst)
	// Measured: 0 (the same nodes in both graphs); 1e-5 leaves ONNX
	// Runtime room to fuse them differently.
	if worst > 1e-5 {
		t.Errorf("model.onnx's features differ from backbone.onnx's by %.3g relative, want <= 1e-5", worst)
	}
}

// TestClassifyBatchEqualsSingle checks that batching does not change
// results and that a Result holds what WithTopK asks, capped at K.
func TestClassifyBatchEqualsSingle(t *testing.T) {
	f := loadFixture(t)
	cases := []struct {
		opts []Option
		want int
	}{
		{nil, fixtureTopK},
		{[]Option{WithTopK(1)}, 1},
		{[]Option{WithTopK(10)}, 10},
		{[]Option{WithTopK(1000)}, 10},
	}
	imgs := []image.Image{fashionImage(f.test, 5000), fashionImage(f.test, 5001), fashionImage(f.test, 5002)}
	for i, cs := range cases {
		c := openCPU(t, f.twoTasks, cs.opts...)
		if c.TopK() != cs.want {
			t.Errorf("case %d: TopK() = %d, want %d", i, c.TopK(), cs.want)
		}
		batch, err := c.ClassifyBatch(context.Background(), imgs)
		if err != nil {
			t.Fatal(err)
		}
		for j, img := range imgs {
			single, err := c.Classify(context.Background(), img)
			if err != nil {
				t.Fatal(err)
			}
			if len(single.Predictions) != cs.want || !samePredictions(single, batch[j], 1e-5) {
				t.Errorf("case %d image %d: single %+v, in batch %+v", i, j, single, batch[j])
			}
		}
	}
}

// samePredictions compares two Results: same classes in the same order,
// distances equal up to tol relative.
func samePredictions(a, b Result, tol float64) bool {
	if len(a.Predictions) != len(b.Predictions) {
		return false
	}
	for i := range a.Predictions {
		p, q := a.Predictions[i], b.Predictions[i]
		if p.ClassID != q.ClassID || p.Name != q.Name || p.Task != q.Task ||
			math.Abs(float64(p.Distance-q.Distance)) > tol*max(1, math.Abs(float64(p.Distance))) {
			return false
		}
	}
	return true
}

func TestClassifyFileAndReader(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	dir := t.TempDir()
	img := fashionImage(f.test, 7000)
	want, err := c.Classify(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	pngPath := filepath.Join(dir, "shirt.png")
	if err := os.WriteFile(pngPath, encodePNG(t, img), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := c.ClassifyFile(context.Background(), pngPath)
	if err != nil || !samePredictions(got, want, 0) {
		t.Errorf("ClassifyFile(png) = %+v, %v; want %+v", got, err, want)
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	got, err = c.ClassifyReader(context.Background(), &jpg)
	if err != nil || len(got.Predictions) != fixtureTopK {
		t.Errorf("ClassifyReader(jpeg) = %+v, %v", got, err)
	}

	corrupt := filepath.Join(dir, "corrupt.png")
	if err := os.WriteFile(corrupt, encodePNG(t, img)[:60], 0o644); err != nil {
		t.Fatal(err)
	}
	bomb := filepath.Join(dir, "bomb.png")
	if err := os.WriteFile(bomb, pngHeader(100000, 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want error
		text string
	}{
		{filepath.Join(dir, "missing.png"), os.ErrNotExist, "missing.png"},
		{corrupt, nil, "corrupt.png: truncated or corrupt png image"},
		{bomb, imaging.ErrTooLarge, "bomb.png: png header declares 100000x100000"},
	}
	for i, cs := range cases {
		_, err := c.ClassifyFile(context.Background(), cs.path)
		if err == nil || (cs.want != nil && !errors.Is(err, cs.want)) || !strings.Contains(err.Error(), cs.text) {
			t.Errorf("case %d: error %v, want %v mentioning %q", i, err, cs.want, cs.text)
		}
	}
	if _, err := c.ClassifyBatch(context.Background(), []image.Image{img, nil}); !errors.Is(err, ErrNilImage) || !strings.Contains(err.Error(), "image 1: image is nil") {
		t.Errorf("nil image: error %v", err)
	}
	if rs, err := c.ClassifyBatch(context.Background(), nil); rs != nil || err != nil {
		t.Errorf("empty batch: %v, %v", rs, err)
	}
}

// gelu is the exact GELU, as the adapter computes it (docs/method.md, "Networks").
func gelu(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt2)) }

// linear computes x W^T + b for one row.
func linear(x []float64, w, b safetensors.Tensor) []float64 {
	out := make([]float64, w.Shape[0])
	for o := range out {
		s := float64(b.Data[o])
		for i, v := range x {
			s += v * float64(w.Data[o*w.Shape[1]+i])
		}
		out[o] = s
	}
	return out
}

func TestTransport(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	get := func(name string) safetensors.Tensor {
		ts, ok := safetensors.Find(f.adapter, name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return ts
	}
	old, err := c.Embed(context.Background(), []image.Image{fashionImage(f.test, 1), fashionImage(f.test, 2)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Transport(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range old {
		x := make([]float64, len(row))
		for j, v := range row {
			x[j] = float64(v)
		}
		h := linear(x, get("fc1.weight"), get("fc1.bias"))
		for j := range h {
			h[j] = gelu(h[j])
		}
		want := linear(h, get("fc2.weight"), get("fc2.bias"))
		for j := range want {
			if d := math.Abs(float64(got[i][j]) - want[j]); d > 1e-4*max(1, math.Abs(want[j])) {
				t.Errorf("row %d value %d: %v, want %v", i, j, got[i][j], want[j])
			}
		}
	}

	bad := []struct {
		rows [][]float32
		text string
	}{
		{[][]float32{make([]float32, fixtureFeatureDim-1)}, "feature row 0 has 7 values, want 8"},
		{[][]float32{make([]float32, fixtureFeatureDim), {1, 2, float32(math.NaN()), 4, 5, 6, 7, 8}}, "feature row 1 value 2 is NaN"},
	}
	for i, b := range bad {
		if _, err := c.Transport(context.Background(), b.rows); err == nil || !strings.Contains(err.Error(), b.text) {
			t.Errorf("case %d: error %v, want %q", i, err, b.text)
		}
	}

	one := openCPU(t, f.oneTask)
	if _, err := one.Transport(context.Background(), old); !errors.Is(err, ErrNoAdapter) {
		t.Errorf("one-task bundle: error %v, want ErrNoAdapter", err)
	}
	if n := len(one.Classes()); n != 5 {
		t.Errorf("one-task bundle has %d classes, want 5", n)
	}
}

// TestConcurrentClassify runs Classify from many goroutines on one
// Classifier (run it with -race) and checks every result against the one
// computed alone.
func TestConcurrentClassify(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	const goroutines, perGoroutine = 32, 8
	imgs := make([]image.Image, goroutines)
	want := make([]Result, goroutines)
	for i := range imgs {
		imgs[i] = fashionImage(f.test, 100+i)
		var err error
		if want[i], err = c.Classify(context.Background(), imgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, goroutines*perGoroutine)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range perGoroutine {
				i := (g + r) % goroutines
				got, err := c.Classify(context.Background(), imgs[i])
				if err != nil {
					errs <- err
				} else if !samePredictions(got, want[i], 0) {
					errs <- errors.New("result differs from the sequential one")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCloseWhileClassifying closes a Classifier while goroutines use it:
// every call either succeeds or returns ErrClosed, and Close is idempotent.
func TestCloseWhileClassifying(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	img := fashionImage(f.test, 9)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			for range 20 {
				if _, err := c.Classify(context.Background(), img); err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("classify during close: %v", err)
				}
			}
		})
	}
	close(start)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Classify(context.Background(), img); !errors.Is(err, ErrClosed) {
		t.Errorf("Classify after Close: %v", err)
	}
	if _, err := c.Embed(context.Background(), []image.Image{img}); !errors.Is(err, ErrClosed) {
		t.Errorf("Embed after Close: %v", err)
	}
	var nilClassifier *Classifier
	if err := nilClassifier.Close(); err != nil {
		t.Errorf("nil Close: %v", err)
	}
}

// copyBundle copies a test bundle so a test can damage it.
func copyBundle(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "model")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestOpenErrors(t *testing.T) {
	f := loadFixture(t)
	damaged := copyBundle(t, f.twoTasks)
	model := filepath.Join(damaged, bundle.ModelFile)
	b := readFile(t, model)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(model, b, 0o644); err != nil {
		t.Fatal(err)
	}
	noAdapter := copyBundle(t, f.twoTasks)
	if err := os.Remove(filepath.Join(noAdapter, bundle.AdapterFile)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		dir  string
		opts []Option
		want error
		text string
	}{
		{"no directory", filepath.Join(t.TempDir(), "none"), nil, bundle.ErrMissingFile, "manifest.json"},
		{"flipped bit", damaged, nil, bundle.ErrChecksum, "model.onnx"},
		{"adapter deleted", noAdapter, nil, bundle.ErrMissingFile, "adapter.onnx"},
		{"unknown provider", f.twoTasks, []Option{WithProvider("gpu")}, nil, `unknown execution provider "gpu"`},
		{"negative threads", f.twoTasks, []Option{WithThreads(-1)}, nil, "threads -1 is negative"},
		{"fp16 on cpu", f.twoTasks, []Option{WithProvider(ProviderCPU), WithFP16(true)}, nil, "fp16 applies to the tensorrt provider"},
		{"engine cache on cuda", f.twoTasks, []Option{WithProvider(ProviderCUDA), WithEngineCache("/tmp/x")}, nil, "engine cache applies to the tensorrt provider"},
		{"zero max pixels", f.twoTasks, []Option{WithMaxPixels(0)}, nil, "max pixels 0 is not positive"},
	}
	for i, cs := range cases {
		c, err := Open(context.Background(), cs.dir, append(cs.opts, WithLog(nil))...)
		if err == nil {
			c.Close()
			t.Errorf("case %d %s: opened, want an error", i, cs.name)
			continue
		}
		if c != nil {
			t.Errorf("case %d %s: non-nil Classifier with error", i, cs.name)
		}
		if (cs.want != nil && !errors.Is(err, cs.want)) || !strings.Contains(err.Error(), cs.text) {
			t.Errorf("case %d %s: error %q, want %v mentioning %q", i, cs.name, err, cs.want, cs.text)
		}
		if err := c.Close(); err != nil {
			t.Errorf("case %d %s: Close after failed Open: %v", i, cs.name, err)
		}
	}
}

// TestOpenModelNotMatchingManifest writes a bundle whose model.onnx scores 5
// classes while the manifest lists 10: Open's warm-up run must catch it.
func TestOpenModelNotMatchingManifest(t *testing.T) {
	f := loadFixture(t)
	src, err := bundle.Open(f.twoTasks)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for name := range src.Manifest.Files {
		files[name] = readFile(t, src.Path(name))
	}
	files[bundle.ModelFile] = readFile(t, filepath.Join(f.oneTask, bundle.ModelFile))
	dir := filepath.Join(t.TempDir(), "mismatch")
	m := src.Manifest
	if err := bundle.Write(dir, &m, files); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), dir, WithProvider(ProviderCPU))
	if err == nil || !strings.Contains(err.Error(), "does not match its manifest") || !strings.Contains(err.Error(), "model.onnx") {
		t.Errorf("error %v, want a mismatch naming model.onnx", err)
	}
}

// TestProviders checks what the ONNX Runtime library offers. A GPU provider
// that is not available must fail with ErrProviderUnavailable, naming it and
// the fix (on a CPU build: both TensorRT and CUDA); one that is available
// must classify 64 real test images as the CPU does. Auto must run on the
// first available of TensorRT, CUDA, CPU and say in one line why it passed
// over the others.
func TestProviders(t *testing.T) {
	f := loadFixture(t)
	imgs := make([]image.Image, 64)
	for i := range imgs {
		imgs[i] = fashionImage(f.test, 100*i)
	}
	cpu, err := Open(context.Background(), f.twoTasks, WithProvider(ProviderCPU), WithLog(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	want, err := cpu.ClassifyBatch(context.Background(), imgs)
	if err != nil {
		t.Fatal(err)
	}
	expected := ProviderCPU
	for i, p := range []Provider{ProviderTensorRT, ProviderCUDA} {
		opts := []Option{WithProvider(p), WithLog(io.Discard)}
		if p == ProviderTensorRT {
			opts = append(opts, WithEngineCache(t.TempDir()))
		}
		c, err := Open(context.Background(), f.twoTasks, opts...)
		switch {
		case errors.Is(err, ErrProviderUnavailable):
			if !strings.Contains(err.Error(), string(p)) || !strings.Contains(err.Error(), "GPU build") {
				t.Errorf("case %d %s: error %v, want one naming the provider and the fix", i, p, err)
			}
			t.Logf("%s: unavailable, as on a CPU build of ONNX Runtime", p)
		case err != nil:
			t.Errorf("case %d %s: error %v, want success or ErrProviderUnavailable", i, p, err)
		default:
			if expected == ProviderCPU {
				expected = p
			}
			compareWithCPU(t, c, imgs, want)
			c.Close()
		}
	}

	var log bytes.Buffer
	c, err := Open(context.Background(), f.twoTasks, WithLog(&log), WithEngineCache(t.TempDir()), WithFP16(true))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Provider() != expected {
		t.Errorf("auto chose %s, want %s, the first available", c.Provider(), expected)
	}
	line := log.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Errorf("auto wrote %q, want exactly one line", line)
	}
	wantWords := []string{"runs on " + string(expected)}
	for _, p := range autoOrder {
		if p == expected {
			break
		}
		wantWords = append(wantWords, string(p)+": ")
	}
	for _, w := range wantWords {
		if !strings.Contains(line, w) {
			t.Errorf("auto line %q does not mention %q", line, w)
		}
	}
	t.Logf("auto: %s", strings.TrimSpace(line))
}

// compareWithCPU classifies imgs on c and checks that every image gets the
// CPU's classes in the CPU's order, with distances within 1e-3 relative (GPU
// kernels round differently).
func compareWithCPU(t *testing.T, c *Classifier, imgs []image.Image, want []Result) {
	t.Helper()
	got, err := c.ClassifyBatch(context.Background(), imgs)
	if err != nil {
		t.Fatalf("%s: %v", c.Provider(), err)
	}
	for i := range want {
		for r, p := range got[i].Predictions {
			q := want[i].Predictions[r]
			if p.ClassID != q.ClassID || math.Abs(float64(p.Distance-q.Distance)) > 1e-3*math.Max(1, math.Abs(float64(q.Distance))) {
				t.Errorf("%s: image %d rank %d: %+v, the CPU gives %+v", c.Provider(), i, r, p, q)
			}
		}
	}
	t.Logf("%s: %d images classified as on the CPU", c.Provider(), len(imgs))
}

func TestParseProvider(t *testing.T) {
	cases := []struct {
		in   string
		want Provider
		ok   bool
	}{
		{"auto", ProviderAuto, true}, {"TensorRT", ProviderTensorRT, true}, {" cuda ", ProviderCUDA, true},
		{"cpu", ProviderCPU, true}, {"gpu", "", false}, {"", "", false},
	}
	for i, c := range cases {
		got, err := ParseProvider(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("case %d %q: %q, %v", i, c.in, got, err)
		}
	}
}

func TestRankClassesTiesAndNaN(t *testing.T) {
	classes := []bundle.Class{{ID: 10, Name: "a"}, {ID: 11, Name: "b", Task: 1}, {ID: 12, Name: "c"}, {ID: 13, Name: "d"}}
	got, err := rankClasses([]float32{2, 1, 1, 0.5}, classes, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Prediction{{ClassID: 13, Name: "d", Distance: 0.5}, {ClassID: 11, Name: "b", Task: 1, Distance: 1}, {ClassID: 12, Name: "c", Distance: 1}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rank %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for i, d := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		if _, err := rankClasses([]float32{0, d, 1, 2}, classes, 2); err == nil || !strings.Contains(err.Error(), `class 11 ("b")`) {
			t.Errorf("case %d %v: error %v", i, d, err)
		}
	}
}

// TestRankShortlist: the shortlisted columns rank first, whatever the
// others' (approximate) distances, ties by class index whatever the
// shortlist's order; asked for more, the others follow by distance; a NaN
// anywhere in the row is an error.
func TestRankShortlist(t *testing.T) {
	classes := []bundle.Class{{ID: 10, Name: "a"}, {ID: 11, Name: "b"}, {ID: 12, Name: "c"}, {ID: 13, Name: "d"}, {ID: 14, Name: "e"}}
	distances := []float32{0.1, 3, 2, 2, 0.2} // columns 0 and 4 not shortlisted
	got, err := rankShortlist(distances, []int64{3, 1, 2}, classes, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Prediction{{ClassID: 12, Name: "c", Distance: 2}, {ClassID: 13, Name: "d", Distance: 2}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	all, err := rankShortlist(distances, []int64{3, 1, 2}, classes, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, p := range all {
		ids = append(ids, p.ClassID)
	}
	if want := []int{12, 13, 11, 10, 14}; !slices.Equal(ids, want) {
		t.Errorf("every class: order %v, want the shortlisted %v then the rest by distance", ids, want)
	}
	distances[0] = float32(math.NaN())
	if _, err := rankShortlist(distances, []int64{3, 1, 2}, classes, 2); err == nil || !strings.Contains(err.Error(), `class 10 ("a")`) {
		t.Errorf("NaN outside the shortlist: error %v, want one naming class 10", err)
	}
}

// TestRankClassesMatchesStableSort checks the selection in rankClasses
// against a stable sort of all distances, with many ties, for every k.
func TestRankClassesMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	for trial := range 50 {
		n := 1 + rng.IntN(40)
		distances := make([]float32, n)
		classes := make([]bundle.Class, n)
		for i := range distances {
			distances[i] = float32(rng.IntN(6))
			classes[i] = bundle.Class{ID: 100 + i}
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return distances[order[a]] < distances[order[b]] })
		for k := 1; k <= n+1; k++ {
			got, err := rankClasses(distances, classes, k)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != min(k, n) {
				t.Fatalf("trial %d k %d: %d predictions", trial, k, len(got))
			}
			for r, p := range got {
				if p.ClassID != 100+order[r] {
					t.Fatalf("trial %d k %d rank %d: class %d, want %d (distances %v)", trial, k, r, p.ClassID, 100+order[r], distances)
				}
			}
		}
	}
}
