package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
)

// photoSizes are the sizes (width x height) the photo-like test images
// are written at, in turn: landscape, portrait and square, none of them the
// model's input size.
var photoSizes = []image.Point{{40, 30}, {56, 72}, {36, 36}, {64, 48}, {30, 44}}

// writePhotoFolders writes classes of Fashion-MNIST as an image-folder
// dataset of photo-like files: each 28x28 image is tinted into RGB, placed
// on a wider or taller canvas of its class's background (so a squash would
// distort it and a center crop keeps it whole), and saved as JPEG or PNG
// in turn. It returns, per split, the files in the loader's order (class
// folders sorted, files sorted), which is the dataset's image order.
func writePhotoFolders(t *testing.T, root string, classes map[int]string, perClass map[string]int) map[string][]string {
	t.Helper()
	train, test, err := data.LoadFashionMNIST(data.FashionMNISTDir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]string{}
	for split, ds := range map[string]*data.Dataset{"train": train, "test": test} {
		names := sortedClassNames(classes)
		for _, name := range names {
			label := labelOf(classes, name)
			n := 0
			for i, l := range ds.Labels {
				if l != label || n >= perClass[split] {
					continue
				}
				size := photoSizes[n%len(photoSizes)]
				path := filepath.Join(root, split, name, fmt.Sprintf("%04d.%s", n, []string{"jpg", "png"}[n%2]))
				writePhoto(t, path, photoOf(ds.Image(i), size, label))
				files[split] = append(files[split], path)
				n++
			}
		}
	}
	return files
}

// photoOf draws a 28x28 gray image, scaled to fit the shorter side of a
// canvas of the given size, centred on it, tinted by the class.
func photoOf(pix []uint8, size image.Point, label int) image.Image {
	gray := &image.Gray{Pix: pix, Stride: 28, Rect: image.Rect(0, 0, 28, 28)}
	canvas := image.NewRGBA(image.Rect(0, 0, size.X, size.Y))
	side := min(size.X, size.Y)
	off := image.Pt((size.X-side)/2, (size.Y-side)/2)
	draw.CatmullRom.Scale(canvas, image.Rectangle{off, off.Add(image.Pt(side, side))}, gray, gray.Bounds(), draw.Src, nil)
	tint := [3]int{40 * label, 255 - 30*label, 128}
	for i := 0; i < len(canvas.Pix); i += 4 {
		v := int(canvas.Pix[i])
		for c := range 3 {
			canvas.Pix[i+c] = uint8((v*(255-tint[c]/2) + 10*tint[c]) / 255)
		}
		canvas.Pix[i+3] = 255
	}
	return canvas
}

func writePhoto(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	var err error
	if filepath.Ext(path) == ".png" {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 92})
	}
	if err == nil {
		err = os.WriteFile(path, b.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func sortedClassNames(classes map[int]string) []string {
	var names []string
	for _, n := range classes {
		names = append(names, n)
	}
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if names[j] < names[i] {
				names[i], names[j] = names[j], names[i]
			}
		}
	}
	return names
}

func labelOf(classes map[int]string, name string) int {
	for l, n := range classes {
		if n == name {
			return l
		}
	}
	return -1
}

// photoConfig is a small photo run: RGB 28x28 center crops (shorter side
// resized to 32), random resized crops from the images kept at load
// resolution, flips, the convnet, two tasks of two classes. A pretrained
// backbone is one more line here (model.pretrained).
func photoConfig(root string) config.Config {
	c := config.Default()
	c.Data = config.Default().Data
	c.Data.Kind = "imagefolder"
	c.Data.TrainDir, c.Data.TestDir = filepath.Join(root, "train"), filepath.Join(root, "test")
	c.Data.Channels, c.Data.Height, c.Data.Width = 3, 28, 28
	c.Data.Mean, c.Data.Std = nil, nil // imagefolder's default: ImageNet's
	c.Data.ResizeMode, c.Data.CenterCropRatio = "center-crop", 0.875
	c.Data.CropPadding, c.Data.RandomResizedCrop, c.Data.HorizontalFlip = 0, true, true
	c.Stream.Tasks = 2
	c.Train.EpochsFirst, c.Train.Epochs, c.Train.BatchSize = 6, 4, 32
	c.Train.Rotation = false
	c.Adapter.TransportSamples, c.Adapter.Epochs = 300, 2
	return c
}

// TestPhotoFolderEndToEnd trains on photo-like JPEG and PNG files of
// varied non-square sizes with center-crop preprocessing, exports, and
// checks that the exported model, run by package infer on each test file
// and by the bicyc-infer command on the folder, agrees with the trainer's
// own evaluation on every test image, the center crop read from the
// manifest.
func TestPhotoFolderEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST photos")
	}
	start := time.Now()
	root := t.TempDir()
	classes := map[int]string{0: "tshirt", 1: "trouser", 7: "sneaker", 8: "bag"}
	files := writePhotoFolders(t, root, classes, map[string]int{"train": 80, "test": 30})
	cfg := photoConfig(root)
	dir := t.TempDir()
	r := trainRun(t, cfg, dir, 0)
	if r.train.Photos == nil || r.train.Photos.Len() != len(files["train"]) {
		t.Fatalf("training photos not kept at load resolution: %+v", r.train.Photos)
	}
	ev, err := r.Evaluate(cfg.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Predictions) != len(files["test"]) {
		t.Fatalf("evaluated %d of %d test images", len(ev.Predictions), len(files["test"]))
	}
	// Each task is learned; how much of task 1 survives so small a budget
	// is not this test's subject.
	s := summary(t, r)
	t.Logf("TAg accuracy: task 1 after task 1 %.3f, tasks 1 and 2 after task 2 %v (%v since start)", s.MatrixTAg.At(0, 0), s.Reports[1].TAg, time.Since(start))
	if a, b := s.MatrixTAg.At(0, 0), s.MatrixTAg.At(1, 1); a < 0.8 || b < 0.8 {
		t.Errorf("task accuracies %.3f and %.3f right after training them: the photos were not learned", a, b)
	}

	model, b := exportBundle(t, dir)
	if p := b.Manifest.Preprocess; p.ResizeMode != data.ResizeCenterCrop || p.ResizeShorter != 32 || p.Height != 28 || p.Mean[0] != 0.485 {
		t.Fatalf("manifest preprocessing %+v, want a 28x28 center crop of the shorter side resized to 32, ImageNet mean", p)
	}
	clf, err := infer.Open(model, infer.WithLog(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer clf.Close()
	want := map[string]int{}
	for i, j := range ev.TestIndices {
		want[files["test"][j]] = ev.Predictions[i]
		res, err := clf.ClassifyFile(files["test"][j])
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Predictions[0].ClassID; got != ev.Predictions[i] {
			t.Errorf("%s: infer predicts class %d, the trainer %d", files["test"][j], got, ev.Predictions[i])
		}
	}
	t.Logf("trained, exported and checked with infer in %v", time.Since(start))
	got := runInferCommand(t, model, filepath.Join(root, "test"))
	if len(got) != len(want) {
		t.Errorf("bicyc-infer classified %d of %d files", len(got), len(want))
	}
	for file, class := range want {
		if got[file] != class {
			t.Errorf("bicyc-infer %s: class %d, the trainer %d", file, got[file], class)
		}
	}
}

// exportBundle exports the run in dir to dir/model and opens the bundle.
func exportBundle(t *testing.T, dir string) (string, *bundle.Bundle) {
	t.Helper()
	model := filepath.Join(dir, "model")
	if err := Export(dir, model); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	return model, b
}

// runInferCommand builds the bicyc-infer command, runs it with --json on a
// folder and returns the top-1 class id it gives each file (-1 for a file
// it could not classify).
func runInferCommand(t *testing.T, model, folder string) map[string]int {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bicyc-infer")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/bicyc-infer").CombinedOutput(); err != nil {
		t.Fatalf("build bicyc-infer: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--model", model, "--json", folder)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bicyc-infer: %v\n%s", err, stderr.String())
	}
	top := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line struct {
			File        string             `json:"file"`
			Predictions []infer.Prediction `json:"predictions"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("bicyc-infer --json line %q: %v", sc.Text(), err)
		}
		top[line.File] = -1
		if len(line.Predictions) > 0 {
			top[line.File] = line.Predictions[0].ClassID
		}
	}
	return top
}
