package train

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/models"
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
// resolution, flips, the convnet, two tasks of two classes.
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

// pretrainedPhotoConfig is photoConfig with a narrow ImageNet-stem
// ResNet-18 started from the pretrained package's fixture (a torchvision
// export of width 4), its stem and layer1 frozen, at 32x32, with the
// fine-tuning recipe of configs/cub200-t10.yaml: learning rate 0.1 on every
// task, a tenth of it for the backbone. Task 2 gets at least 100 steps
// (task 1 has train.min_steps_first): its 320 images make 10 an epoch.
func pretrainedPhotoConfig(root string) config.Config {
	c := photoConfig(root)
	c.Data.Height, c.Data.Width = 32, 32
	c.Train.LR, c.Train.BackboneLRScale, c.Train.MinSteps = 0.1, 0.1, 100
	c.Model.Backbone, c.Model.Width, c.Model.FreezeStages = arch.ResNet18ImageNet, 4, 2
	c.Model.Pretrained = filepath.Join("..", "pretrained", "testdata", "resnet18_w4.onnx")
	return c
}

// TestPhotoFolderEndToEnd trains on photo-like JPEG and PNG files of
// varied non-square sizes with center-crop preprocessing, exports, and
// checks that the exported model, run by package infer on each test file
// and by the bicyc-infer command on the folder, agrees with the trainer's
// own evaluation on every test image, the center crop read from the
// manifest. It does so for the convnet trained from scratch and for a
// pretrained ResNet-18 fine-tuned with frozen stages, whose frozen weights
// must still be the imported ones after both tasks.
func TestPhotoFolderEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST photos")
	}
	root := t.TempDir()
	classes := map[int]string{0: "tshirt", 1: "trouser", 7: "sneaker", 8: "bag"}
	files := writePhotoFolders(t, root, classes, map[string]int{"train": 160, "test": 60})
	// minTAg and minTAw are the task-agnostic and task-aware accuracies each
	// task must reach right after training it (chance: 1/2 task-aware; 1/2 on
	// task 1 and 1/4 on task 2 task-agnostic). They sit well below what was
	// measured under every kernel set this machine runs (an AVX-512 Xeon:
	// OPENBLAS_CORETYPE SkylakeX, Haswell, Zen, Sandybridge and Prescott, and
	// -tags purego), since kernel sets round differently and training
	// amplifies it:
	//   convnet: task 1 0.992 / 0.992, task 2 0.942-0.983 / 0.958-1.000
	//   pretrained: task 1 0.950-0.958 / same, task 2 0.658-0.750 / 0.842-0.892
	// The pretrained fixture is 4 channels wide with random weights, its first
	// two stages frozen, 32 channels before the reduction: it keeps task 2's
	// classes apart from task 1's less well than the convnet. With 80 training
	// and 30 test images a class it learned task 2 to 0.667 task-aware on
	// three of those kernel sets and 0.883 on SkylakeX: a fixture whose
	// verdict hung on rounding, hence twice the images.
	for i, tc := range []struct {
		name           string
		cfg            config.Config
		minTAg, minTAw float64
	}{
		{"convnet", photoConfig(root), 0.8, 0.85},
		{"pretrained-resnet18-frozen", pretrainedPhotoConfig(root), 0.5, 0.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := trainRun(t, tc.cfg, t.TempDir(), 0)
			if tc.cfg.Model.Pretrained != "" {
				checkFrozenImported(t, tc.cfg, r.State().Backbone)
			}
			checkPhotoRun(t, r, files, tc.minTAg, tc.minTAw, start)
			t.Logf("case %d (%s): trained, exported and checked in %v", i, tc.name, time.Since(start))
		})
	}
}

// checkFrozenImported checks that every tensor of the backbone's frozen
// stages (stem and layer1 for 2: conv1, bn1, layer1.*) is exactly what
// cfg.Model.Pretrained holds, BatchNorm running statistics included, and
// that a later stage has trained.
func checkFrozenImported(t *testing.T, cfg config.Config, b *models.Backbone) {
	t.Helper()
	want := importedState(t, cfg)
	if b.FrozenStages() != cfg.Model.FreezeStages {
		t.Errorf("%d frozen stages, want %d", b.FrozenStages(), cfg.Model.FreezeStages)
	}
	frozen, trained := 0, false
	for _, ts := range b.State() {
		same := slices.Equal(ts.Data, want[ts.Name])
		if strings.HasPrefix(ts.Name, "conv1.") || strings.HasPrefix(ts.Name, "bn1.") || strings.HasPrefix(ts.Name, "layer1.") {
			frozen++
			if !same {
				t.Errorf("frozen %s differs from %s after training", ts.Name, cfg.Model.Pretrained)
			}
		}
		trained = trained || ts.Name == "layer2.0.conv1.weight" && !same
	}
	if frozen == 0 || !trained {
		t.Errorf("%d frozen tensors checked; layer2.0.conv1.weight trained: %t", frozen, trained)
	}
}

// checkPhotoRun checks a finished two-task photo run: each task learned
// (task-agnostic accuracy >= minTAg, task-aware >= minTAw right after
// training it), the manifest's center crop, and infer and bicyc-infer agreeing with
// the trainer's evaluation on every test file.
func checkPhotoRun(t *testing.T, r *Run, files map[string][]string, minTAg, minTAw float64, start time.Time) {
	t.Helper()
	cfg := r.Config()
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
	t.Logf("TAg / TAw accuracy right after training: task 1 %.3f / %.3f, task 2 %.3f / %.3f (%v since start)", s.MatrixTAg.At(0, 0), s.MatrixTAw.At(0, 0), s.MatrixTAg.At(1, 1), s.MatrixTAw.At(1, 1), time.Since(start))
	for task := range 2 {
		if tag, taw := s.MatrixTAg.At(task, task), s.MatrixTAw.At(task, task); tag < minTAg || taw < minTAw {
			t.Errorf("task %d right after training it: task-agnostic accuracy %.3f (want >= %.2f), task-aware %.3f (want >= %.2f): the photos were not learned",
				task+1, tag, minTAg, taw, minTAw)
		}
	}

	model, b := exportBundle(t, r.Dir())
	side := cfg.Data.Height
	if p := b.Manifest.Preprocess; p.ResizeMode != arch.CenterCrop || p.ResizeShorter != imaging.CenterCropResize(side, 0.875) || p.Height != side || p.Mean[0] != 0.485 {
		t.Fatalf("manifest preprocessing %+v, want a %dx%d center crop of the shorter side resized to %d, ImageNet mean", p, side, side, imaging.CenterCropResize(side, 0.875))
	}
	clf, err := infer.Open(context.Background(), model, infer.WithLog(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer clf.Close()
	want := map[string]int{}
	for i, j := range ev.TestIndices {
		want[files["test"][j]] = ev.Predictions[i]
		res, err := clf.ClassifyFile(context.Background(), files["test"][j])
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Predictions[0].ClassID; got != ev.Predictions[i] {
			t.Errorf("%s: infer predicts class %d, the trainer %d", files["test"][j], got, ev.Predictions[i])
		}
	}
	got := runInferCommand(t, model, filepath.Dir(filepath.Dir(files["test"][0])))
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
	if err := Export(dir, model, 0); err != nil {
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
