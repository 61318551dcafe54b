package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/image/draw"

	"github.com/bicyc/bicyc/bench/compare"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel/small"
)

// options are the command's flags.
type options struct {
	model, backbone string
	bin, script     string
	ortLib          string
	threads         int
	rounds, calls   int
	batch, reps     int
	procs           int
	torch           bool
	photo           image.Point
	// classes, when set, sweeps class counts instead (runClasses).
	classes      []int
	csv, workDir string
	addBin       string
	keep         bool
	shortlist    []int
	measureOnly  bool
	exactScores  bool
	agreement    int
}

func main() {
	var o options
	flag.StringVar(&o.model, "model", "", "model directory exported by bicyc (default: the tests' small model, with its backbone weights for PyTorch; the smallest run, for checking that the benchmark works)")
	flag.StringVar(&o.backbone, "backbone", "", "backbone.safetensors for PyTorch (default: the run's latest checkpoint)")
	flag.StringVar(&o.bin, "bin", "", "bicyc-infer binary for the whole-process runs (default: build one)")
	flag.StringVar(&o.script, "script", "bench/infer_torch.py", "the PyTorch side")
	flag.StringVar(&o.ortLib, "ort-lib", "", "ONNX Runtime library (default infer.DefaultLibraryPath)")
	flag.IntVar(&o.threads, "threads", infer.DefaultThreads, "intra-op threads of both sides")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds (medians are over rounds)")
	flag.IntVar(&o.calls, "calls", 2000, "batch-1 calls per latency round")
	flag.IntVar(&o.batch, "batch", 256, "throughput batch size")
	flag.IntVar(&o.reps, "reps", 10, "batches per throughput round")
	flag.IntVar(&o.procs, "procs", 11, "whole-process runs of each side")
	flag.BoolVar(&o.torch, "torch", true, "also run PyTorch (false: bicyc alone, e.g. for a backbone bench/infer_torch.py lacks)")
	flag.Func("photo-size", "WIDTHxHEIGHT: benchmark on RGB images of this size (default: 28x28 grayscale Fashion-MNIST)", func(v string) error {
		_, err := fmt.Sscanf(v, "%dx%d", &o.photo.X, &o.photo.Y)
		return err
	})
	flag.Func("classes", "N,N,...: grow the model to these class counts with add-classes and measure each (implies --torch=false)", func(v string) error {
		var err error
		o.classes, err = parseClasses(v)
		return err
	})
	flag.StringVar(&o.csv, "csv", "", "with --classes: also write the measurements to this CSV file")
	flag.StringVar(&o.addBin, "add-bin", "", "with --classes: add classes with this bicyc-infer's add-classes command (e.g. an older build) instead of this build's author.AddClasses")
	flag.BoolVar(&o.keep, "keep", false, "with --classes: keep the grown models (and the test images) in the work dir, e.g. to measure approximations on them later")
	flag.Func("shortlist", "N,N,...: with --classes, also measure export.Shortlist of these lengths on every model of 64 classes or more (classifier stage at batch 1, agreement with the exact answer on the test images)", func(v string) error {
		var err error
		o.shortlist, err = parseClasses(v)
		return err
	})
	flag.BoolVar(&o.measureOnly, "shortlist-only", false, "with --classes and --shortlist: --model is a folder of model-K directories kept by --keep; measure only the shortlists")
	flag.BoolVar(&o.exactScores, "exact-scores", false, "open the model with infer.WithExactScores: every class scored exactly, also where the model has a shortlist")
	flag.IntVar(&o.agreement, "agreement", 0, "instead of the benchmark: classify this many Fashion-MNIST test images one per call with the model's default and with exact scores, and compare answers and times")
	flag.StringVar(&o.workDir, "work-dir", "", "with --classes: where the grown models are written (default the system's temp dir)")
	flag.Parse()
	if o.classes != nil {
		o.torch = false
	}
	err := useSmallModel(&o)
	if err == nil {
		err = run(o, os.Stdout)
	}
	small.Cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/infer:", err)
		os.Exit(1)
	}
}

// useSmallModel points o, when it names no model, at the small model the
// tests of serve build (package small: a random convnet, 3 classes) and,
// unless --backbone names one, at its backbone weights for PyTorch.
func useSmallModel(o *options) error {
	if o.model != "" {
		return nil
	}
	var err error
	if o.model, err = small.Dir(); err != nil {
		return fmt.Errorf("building the tests' small model: %w", err)
	}
	if o.backbone == "" {
		o.backbone, err = small.BackboneFile()
	}
	return err
}

// side is what one implementation measured, round by round.
type side struct {
	name       string
	p50, p99   []float64 // microseconds, one per round
	throughput []float64 // images per second, one per round
	// cpuPerCall (microseconds) and cpuThroughput (images per CPU-second)
	// are the same rounds by this process's CPU time, which depends far
	// less than wall time on what else a shared machine runs; ours only.
	cpuPerCall, cpuThroughput []float64
	wall                      []float64 // whole-process milliseconds, one per run
	cpu                       []float64 // whole-process user+system CPU milliseconds, one per run
	procRSS                   []float64 // whole-process peak RSS in bytes, one per run
	// peakRSS is the in-process peak RSS of the benchmark process in bytes:
	// ours is this process after setup (compare.ResetPeakRSS), PyTorch's
	// the worker's whole life.
	peakRSS int64
}

// torchVariants are the PyTorch models of bench/infer_torch.py.
var torchVariants = []string{"eager", "folded"}

func (o options) validate() error {
	if o.threads < 1 || o.rounds < 1 || o.calls < 1 || o.batch < 1 || o.reps < 1 || o.procs < 1 {
		return errors.New("--threads, --rounds, --calls, --batch, --reps and --procs must be >= 1")
	}
	if o.photo != (image.Point{}) && (o.photo.X < 1 || o.photo.Y < 1) {
		return fmt.Errorf("--photo-size %dx%d: want WIDTHxHEIGHT, both >= 1", o.photo.X, o.photo.Y)
	}
	if !o.torch {
		return nil
	}
	if _, err := os.Stat(o.script); err != nil {
		return fmt.Errorf("PyTorch script: %w (run from the repository root or pass --script)", err)
	}
	return nil
}

func run(o options, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.classes != nil {
		return runClasses(o, out)
	}
	tmp, err := workspace(&o, "", "bicyc-bench-infer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	imageDir := filepath.Join(tmp, "images")
	if o.agreement > 0 {
		return runAgreement(o, imageDir, out)
	}
	imgs, err := writeImages(imageDir, o.batch, o.photo)
	if err != nil {
		return err
	}
	loadStart, err := compare.LoadAverage()
	if err != nil {
		return err
	}
	ortVersion, err := infer.InitRuntime(o.ortLib)
	if err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	if err := compare.ResetPeakRSS(); err != nil {
		return err
	}
	c, err := infer.Open(context.Background(), o.model, infer.WithProvider(infer.ProviderCPU), infer.WithThreads(o.threads),
		infer.WithLibraryPath(o.ortLib), infer.WithLog(io.Discard), infer.WithExactScores(o.exactScores))
	if err != nil {
		return err
	}
	defer c.Close()
	var torch *torchSide
	if o.torch {
		if torch, err = startTorch(o, c, imageDir, imgs); err != nil {
			return err
		}
		defer torch.py.Close()
	}

	ours := &side{name: "bicyc (ONNX Runtime " + ortVersion + ")"}
	if err := measureSides(o, c, imgs, filepath.Join(imageDir, imageName(0)), ours, torch); err != nil {
		return err
	}
	loadEnd, err := compare.LoadAverage()
	if err != nil {
		return err
	}
	writeReport(out, o, c, reportRun{ours: ours, torch: torch, images: len(imgs), load: [2]string{loadStart, loadEnd}})
	return nil
}

// runAgreement writes o.agreement test images to imageDir and reports how
// often bicyc's answers agree with PyTorch's on them.
func runAgreement(o options, imageDir string, out io.Writer) error {
	imgs, err := writeImages(imageDir, o.agreement, o.photo)
	if err != nil {
		return err
	}
	a, err := measureAgreement(o, imgs)
	if err != nil {
		return err
	}
	writeAgreement(out, a)
	return nil
}

// measureSides measures both sides in o.rounds interleaved rounds, then
// ours's peak RSS, then o.procs whole-process runs of each on the image
// file one. A nil torch (no PyTorch side) measures nothing.
func measureSides(o options, c *infer.Classifier, imgs []image.Image, one string, ours *side, torch *torchSide) error {
	for r := range o.rounds {
		fmt.Fprintf(os.Stderr, "round %d/%d\n", r+1, o.rounds)
		if err := ours.measure(c, imgs, o); err != nil {
			return err
		}
		if err := torch.measure(o); err != nil {
			return err
		}
	}
	var err error
	if ours.peakRSS, err = compare.PeakRSS(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "whole-process runs: %d of each\n", o.procs)
	for range o.procs {
		if err := ours.runProcess(o.bin, one, "--model", o.model, "--threads", fmt.Sprint(o.threads), fmt.Sprintf("--exact-scores=%t", o.exactScores)); err != nil {
			return err
		}
		if err := torch.runProcess(o, one); err != nil {
			return err
		}
	}
	return nil
}

// workspace makes the run's temporary directory in parent (the system's
// temp dir when empty) and builds bicyc-infer into it unless o.bin names
// one. The caller removes the directory.
func workspace(o *options, parent, pattern string) (string, error) {
	tmp, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return "", err
	}
	if o.bin == "" {
		if o.bin, err = buildInfer(tmp); err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
	}
	return tmp, nil
}

// buildInfer builds cmd/bicyc-infer into dir and returns its path.
func buildInfer(dir string) (string, error) {
	bin := filepath.Join(dir, "bicyc-infer")
	build := exec.Command("go", "build", "-o", bin, "github.com/bicyc/bicyc/cmd/bicyc-infer")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building bicyc-infer: %w", err)
	}
	return bin, nil
}

// torchSide is the PyTorch worker and what its variants measured.
type torchSide struct {
	py       *compare.Worker
	backbone string // the weights it loaded
	parity   parity
	variants map[string]*side
}

// startTorch starts the PyTorch worker on the same model and images and
// checks that it computes what c computes.
func startTorch(o options, c *infer.Classifier, imageDir string, imgs []image.Image) (*torchSide, error) {
	if o.backbone == "" {
		var err error
		if o.backbone, err = latestBackbone(o.model); err != nil {
			return nil, err
		}
	}
	var hello struct {
		Torch   string
		Threads int
		Images  int
	}
	py, err := compare.StartWorker(&hello, nil, o.script, "serve", "--model", o.model, "--backbone", o.backbone,
		"--threads", fmt.Sprint(o.threads), "--images", imageDir)
	if err != nil {
		return nil, err
	}
	t := &torchSide{py: py, backbone: o.backbone, variants: map[string]*side{}}
	if hello.Images != len(imgs) || hello.Threads != o.threads {
		py.Close()
		return nil, fmt.Errorf("PyTorch worker decoded %d images with %d threads, want %d images, %d threads", hello.Images, hello.Threads, len(imgs), o.threads)
	}
	if t.parity, err = checkParity(c, py, imgs); err != nil {
		py.Close()
		return nil, err
	}
	for _, v := range torchVariants {
		t.variants[v] = &side{name: "PyTorch " + hello.Torch + " " + v}
	}
	return t, nil
}

// measure runs one round of every variant; a nil t (--torch=false) does nothing.
func (t *torchSide) measure(o options) error {
	if t == nil {
		return nil
	}
	for _, v := range torchVariants {
		if err := t.variants[v].measureTorch(t.py, v, o); err != nil {
			return err
		}
	}
	return nil
}

// runProcess runs the whole-process PyTorch classification of one image;
// a nil t does nothing.
func (t *torchSide) runProcess(o options, one string) error {
	if t == nil {
		return nil
	}
	return t.variants["eager"].runProcess(compare.Python(), o.script, "once", "--model", o.model, "--backbone", t.backbone,
		"--threads", fmt.Sprint(o.threads), one)
}

// reportRun is what run measured, for writeReport.
type reportRun struct {
	ours   *side
	torch  *torchSide // nil without PyTorch
	images int
	load   [2]string // load average at start and end
}

func writeReport(out io.Writer, o options, c *infer.Classifier, r reportRun) {
	title := "bicyc vs PyTorch"
	if r.torch == nil {
		title = "bicyc"
	}
	m := c.Manifest().Preprocess
	fmt.Fprintf(out, "## Inference: %s, %s\n\n", title, time.Now().Format("2006-01-02 15:04"))
	fmt.Fprintf(out, "model %s (%s, %dx%dx%d input, %d classes)", o.model, c.Manifest().Backbone, m.Channels, m.Height, m.Width, len(c.Classes()))
	if r.torch != nil {
		fmt.Fprintf(out, ", PyTorch weights %s", r.torch.backbone)
	}
	fmt.Fprintf(out, "\nimages: %s\n", imageKind(o.photo))
	fmt.Fprintf(out, "%d intra-op thread(s) each; %d CPUs; load average %s at start, %s at end\n", o.threads, runtime.NumCPU(), r.load[0], r.load[1])
	fmt.Fprintf(out, "medians of %d rounds (%d batch-1 calls, %d batches of %d per round); whole process: median of %d runs\n",
		o.rounds, o.calls, o.reps, o.batch, o.procs)
	sides := []*side{r.ours}
	if r.torch != nil {
		p := r.torch.parity
		fmt.Fprintf(out, "parity on %d test images: top-1 agrees on %d, largest top-%d distance difference %.2g (relative, absolute below 1: %.2g)\n",
			r.images, p.agree, c.TopK(), p.maxAbs, p.maxRel)
		sides = append(sides, r.torch.variants["eager"], r.torch.variants["folded"])
	}
	fmt.Fprintln(out)
	writeResults(out, sides, o.batch)
	if r.torch != nil {
		fmt.Fprintln(out)
		writeTargets(out, r.ours, r.torch.variants["eager"], o.batch)
	}
}

// latestBackbone returns the backbone checkpoint of the run that exported
// model: DIR/../checkpoints/<name in checkpoints/latest>/backbone.safetensors.
func latestBackbone(model string) (string, error) {
	ckpt := filepath.Join(filepath.Dir(filepath.Clean(model)), "checkpoints")
	latest, err := os.ReadFile(filepath.Join(ckpt, "latest"))
	if err != nil {
		return "", fmt.Errorf("finding the run's checkpoint for PyTorch: %w (pass --backbone FILE)", err)
	}
	name := strings.TrimSpace(string(latest))
	if name == "" || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("%s: %q is not a checkpoint name (pass --backbone FILE)", filepath.Join(ckpt, "latest"), name)
	}
	return filepath.Join(ckpt, name, "backbone.safetensors"), nil
}

func imageName(i int) string { return fmt.Sprintf("test-%05d.png", i) }

// writeImages writes the first n Fashion-MNIST test images as PNG files
// into dir and returns them decoded by imaging.DecodeImage, the way
// bicyc-infer decodes files. A zero photo size keeps them 28x28 grayscale;
// otherwise each is scaled to photo.X x photo.Y and tinted into RGB, so
// that preprocessing does a photo's work (a shorter side resized down,
// three channels). PNG keeps the pixels both sides decode identical.
func writeImages(dir string, n int, photo image.Point) ([]image.Image, error) {
	_, test, err := data.LoadFashionMNIST("")
	if err != nil {
		return nil, err
	}
	if n > test.Len() {
		return nil, fmt.Errorf("--batch %d: the Fashion-MNIST test set has only %d images", n, test.Len())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	imgs := make([]image.Image, n)
	for i := range n {
		var img image.Image = &image.Gray{Pix: test.Image(i), Stride: test.Width, Rect: image.Rect(0, 0, test.Width, test.Height)}
		if photo != (image.Point{}) {
			img = photoOf(img, photo, i)
		}
		path := filepath.Join(dir, imageName(i))
		if err := writePNG(path, img); err != nil {
			return nil, err
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		imgs[i], _, err = imaging.DecodeImage(f, infer.DefaultMaxPixels)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return imgs, nil
}

// photoOf scales a grayscale image to size and tints it by seed into RGB.
func photoOf(gray image.Image, size image.Point, seed int) image.Image {
	rgb := image.NewRGBA(image.Rectangle{Max: size})
	draw.CatmullRom.Scale(rgb, rgb.Bounds(), gray, gray.Bounds(), draw.Src, nil)
	tint := [3]int{seed * 37 % 256, seed * 71 % 256, seed * 113 % 256}
	for i := 0; i < len(rgb.Pix); i += 4 {
		for c := range 3 {
			rgb.Pix[i+c] = uint8((int(rgb.Pix[i+c])*3 + tint[c]) / 4)
		}
	}
	return rgb
}

// imageKind describes the benchmark's input images.
func imageKind(photo image.Point) string {
	if photo == (image.Point{}) {
		return "Fashion-MNIST test images, 28x28 grayscale PNG"
	}
	return fmt.Sprintf("Fashion-MNIST test images scaled to %dx%d and tinted, RGB PNG", photo.X, photo.Y)
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// parity is how closely the two sides agree on the same images.
type parity struct {
	agree          int     // images whose top-1 class is the same
	maxAbs, maxRel float64 // over every top-k distance
}

// checkParity compares our top-k distances with PyTorch's eager scores of
// the same classes. Different top-1 classes, or distances that differ by
// more than 1e-3 relative (absolute below a score of 1), mean the two sides
// do not run the same network, and the benchmark stops. Absolute near zero
// because a score near zero is a difference of terms of size 1 or more (the
// softmax head mixed with the Gaussian classifier gives its best classes
// scores of about 1e-3), so its float32 error is that of those terms.
func checkParity(c *infer.Classifier, py *compare.Worker, imgs []image.Image) (parity, error) {
	var p parity
	results, err := c.ClassifyBatch(context.Background(), imgs)
	if err != nil {
		return p, err
	}
	var reply struct{ Scores [][]float64 }
	if err := py.Call(map[string]any{"op": "scores", "count": len(imgs)}, &reply); err != nil {
		return p, err
	}
	if len(reply.Scores) != len(imgs) {
		return p, fmt.Errorf("PyTorch scored %d images, want %d", len(reply.Scores), len(imgs))
	}
	column := map[int]int{}
	for i, cl := range c.Classes() {
		column[cl.ID] = i
	}
	for i, r := range results {
		scores := reply.Scores[i]
		best := 0
		for j, s := range scores {
			if s < scores[best] {
				best = j
			}
		}
		if column[r.Best().ClassID] == best {
			p.agree++
		}
		for _, pred := range r.Predictions {
			want := scores[column[pred.ClassID]]
			d := math.Abs(float64(pred.Distance) - want)
			p.maxAbs = max(p.maxAbs, d)
			p.maxRel = max(p.maxRel, d/max(math.Abs(want), 1))
		}
	}
	if p.agree != len(imgs) || p.maxRel > 1e-3 {
		return p, fmt.Errorf("bicyc and PyTorch disagree: top-1 equal on %d of %d images, top-k distances differ by up to %.3g (relative, absolute below 1: %.3g)",
			p.agree, len(imgs), p.maxAbs, p.maxRel)
	}
	return p, nil
}

// measure runs one round of ours: o.calls timed single-image Classify
// calls on image 0, then o.reps ClassifyBatch calls on o.batch images.
func (s *side) measure(c *infer.Classifier, imgs []image.Image, o options) error {
	img := imgs[0]
	for range 20 {
		if _, err := c.Classify(context.Background(), img); err != nil {
			return err
		}
	}
	lat := make([]float64, o.calls)
	cpu0, err := compare.CPUTime()
	if err != nil {
		return err
	}
	for i := range lat {
		start := time.Now()
		if _, err := c.Classify(context.Background(), img); err != nil {
			return err
		}
		lat[i] = float64(time.Since(start).Nanoseconds()) / 1e3
	}
	cpu1, err := compare.CPUTime()
	if err != nil {
		return err
	}
	s.p50 = append(s.p50, compare.Percentile(lat, 50))
	s.p99 = append(s.p99, compare.Percentile(lat, 99))
	s.cpuPerCall = append(s.cpuPerCall, float64((cpu1-cpu0).Microseconds())/float64(o.calls))

	batch := imgs[:o.batch]
	if _, err := c.ClassifyBatch(context.Background(), batch); err != nil {
		return err
	}
	start := time.Now()
	if cpu0, err = compare.CPUTime(); err != nil {
		return err
	}
	for range o.reps {
		if _, err := c.ClassifyBatch(context.Background(), batch); err != nil {
			return err
		}
	}
	s.throughput = append(s.throughput, float64(o.reps*o.batch)/time.Since(start).Seconds())
	if cpu1, err = compare.CPUTime(); err != nil {
		return err
	}
	s.cpuThroughput = append(s.cpuThroughput, float64(o.reps*o.batch)/(cpu1-cpu0).Seconds())
	return nil
}

// measureTorch runs the same round in the PyTorch worker.
func (s *side) measureTorch(py *compare.Worker, variant string, o options) error {
	var lat struct {
		LatencyUs  []float64 `json:"latency_us"`
		PeakRSSKiB int64     `json:"peak_rss_kib"`
	}
	if err := py.Call(map[string]any{"op": "latency", "calls": o.calls, "variant": variant}, &lat); err != nil {
		return err
	}
	if len(lat.LatencyUs) != o.calls {
		return fmt.Errorf("PyTorch %s: %d latencies, want %d", variant, len(lat.LatencyUs), o.calls)
	}
	s.p50 = append(s.p50, compare.Percentile(lat.LatencyUs, 50))
	s.p99 = append(s.p99, compare.Percentile(lat.LatencyUs, 99))
	var tp struct {
		Seconds    float64
		Images     int
		PeakRSSKiB int64 `json:"peak_rss_kib"`
	}
	if err := py.Call(map[string]any{"op": "throughput", "batch": o.batch, "reps": o.reps, "variant": variant}, &tp); err != nil {
		return err
	}
	if !(tp.Seconds > 0) || tp.Images != o.batch*o.reps {
		return fmt.Errorf("PyTorch %s: throughput reply %+v", variant, tp)
	}
	s.throughput = append(s.throughput, float64(tp.Images)/tp.Seconds)
	s.peakRSS = tp.PeakRSSKiB << 10
	return nil
}

// runProcess runs one whole process and records its time and memory.
func (s *side) runProcess(program string, args ...string) error {
	r, err := compare.RunTimed(program, args...)
	if err != nil {
		return err
	}
	s.wall = append(s.wall, float64(r.Wall.Microseconds())/1e3)
	s.cpu = append(s.cpu, float64(r.CPU.Microseconds())/1e3)
	s.procRSS = append(s.procRSS, float64(r.PeakRSS))
	return nil
}

func writeResults(out io.Writer, sides []*side, batch int) {
	t := compare.Table{Header: []string{"metric"}}
	for _, s := range sides {
		t.Header = append(t.Header, s.name)
	}
	if len(sides) > 1 {
		t.Header = append(t.Header, "bicyc / PyTorch eager")
	}
	row := func(name, format string, value func(*side) float64) {
		cells := []string{name}
		for _, s := range sides {
			if v := value(s); !math.IsNaN(v) && v > 0 {
				cells = append(cells, fmt.Sprintf(format, v))
			} else {
				cells = append(cells, "-")
			}
		}
		if len(sides) == 1 {
			t.Add(cells...)
			return
		}
		ratio := value(sides[0]) / value(sides[1])
		if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
			cells = append(cells, "-")
		} else {
			cells = append(cells, fmt.Sprintf("%.2f", ratio))
		}
		t.Add(cells...)
	}
	row("latency p50, batch 1 (us)", "%.0f", func(s *side) float64 { return compare.Median(s.p50) })
	row("latency p99, batch 1 (us)", "%.0f", func(s *side) float64 { return compare.Median(s.p99) })
	row(fmt.Sprintf("throughput, batch %d (img/s)", batch), "%.0f", func(s *side) float64 { return compare.Median(s.throughput) })
	row("whole process, one.png, wall (ms)", "%.0f", func(s *side) float64 { return compare.Median(s.wall) })
	row("whole process, one.png, CPU time (ms)", "%.0f", func(s *side) float64 { return compare.Median(s.cpu) })
	row("whole process peak RSS (MB)", "%.0f", func(s *side) float64 { return compare.Median(s.procRSS) / 1e6 })
	row("in-process benchmark peak RSS (MB)", "%.0f", func(s *side) float64 { return compare.MB(s.peakRSS) })
	t.Write(out)
}

func writeTargets(out io.Writer, ours, torch *side, batch int) {
	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "NO"
	}
	p50 := compare.Median(ours.p50) / compare.Median(torch.p50)
	tp := compare.Median(ours.throughput) / compare.Median(torch.throughput)
	wall := compare.Median(ours.wall)
	rss := compare.Median(ours.procRSS) / 1e6
	t := compare.Table{Header: []string{"target (issue \"Inference\")", "measured", "met"}}
	t.Add("p50 <= 1/2 of PyTorch eager's", fmt.Sprintf("%.2f of PyTorch's", p50), met(p50 <= 0.5))
	t.Add(fmt.Sprintf("batch-%d throughput >= 2x PyTorch eager's", batch), fmt.Sprintf("%.2fx", tp), met(tp >= 2))
	t.Add("bicyc-infer whole process < 150 ms", fmt.Sprintf("%.0f ms wall, %.0f ms CPU", wall, compare.Median(ours.cpu)), met(wall < 150))
	t.Add("bicyc-infer peak RSS < 150 MB", fmt.Sprintf("%.0f MB", rss), met(rss < 150))
	t.Write(out)
}
