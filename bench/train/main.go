package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/bicyc/bicyc/bench/compare"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/safetensors"
	"github.com/bicyc/bicyc/train"
)

// options are the command's flags.
type options struct {
	script     string
	ompWait    string
	cpuProfile string
	memProfile string
	threads    int
	rounds     int
	models     string
	// Per benchmark: steps per round, batch size and head classes.
	convSteps, convBatch, convClasses       int
	resnetSteps, resnetBatch, resnetClasses int
}

// batchesKept is how many distinct batches each side cycles through.
const batchesKept = 4

// featureDim is S, the default feature dimension (docs/method.md, "Setting").
const featureDim = 64

func main() {
	var o options
	flag.StringVar(&o.script, "script", "bench/train_torch.py", "the PyTorch side")
	flag.StringVar(&o.ompWait, "omp-wait-policy", "PASSIVE", "OMP_WAIT_POLICY of the PyTorch worker (PASSIVE: no spinning at OpenMP barriers, see README; empty: libgomp's default)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of bicyc's timed steps to this `file` (go tool pprof)")
	flag.StringVar(&o.memProfile, "memprofile", "", "write a heap profile (in use after the last round) of each benchmark to this `file`.<arch> (go tool pprof -sample_index=inuse_space)")
	flag.IntVar(&o.threads, "threads", 2, "threads of both sides (bicyc ops and torch intra-op)")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds (medians are over rounds)")
	flag.StringVar(&o.models, "models", "convnet,resnet18", "benchmarks to run: convnet (BiCyc Stage I step), resnet18 (backbone + CE step)")
	flag.IntVar(&o.convSteps, "convnet-steps", 6, "convnet steps per round")
	flag.IntVar(&o.convBatch, "convnet-batch", 128, "convnet batch size")
	flag.IntVar(&o.convClasses, "convnet-classes", 2, "convnet head classes (a default Fashion-MNIST task)")
	flag.IntVar(&o.resnetSteps, "resnet-steps", 2, "resnet18 steps per round")
	flag.IntVar(&o.resnetBatch, "resnet-batch", 64, "resnet18 batch size")
	flag.IntVar(&o.resnetClasses, "resnet-classes", 10, "resnet18 head classes (a CIFAR-100 10x10 task)")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/train:", err)
		os.Exit(1)
	}
}

// benchmark is one network trained side by side.
type benchmark struct {
	name                  string
	arch                  string
	bicyc                 bool // the full BiCyc Stage I step, else backbone + CE
	steps, batch          int
	classes               int
	channels, side        int
	ours, torch           []float64 // images per second, one per round
	oursCPU, torchCPU     []float64 // images per CPU-second (all threads), one per round
	oursRSS, torchRSS     int64     // peak RSS in bytes
	termNames             []string
	oursTerms, torchTerms []float64 // loss terms of the first step, same weights
}

func run(o options, out io.Writer) error {
	if o.threads < 1 || o.rounds < 1 || o.convSteps < 1 || o.resnetSteps < 1 || o.convBatch < 2 || o.resnetBatch < 2 ||
		o.convClasses < 2 || o.resnetClasses < 2 {
		return errors.New("--threads, --rounds and steps must be >= 1, batches and classes >= 2")
	}
	if _, err := os.Stat(o.script); err != nil {
		return fmt.Errorf("PyTorch script: %w (run from the repository root or pass --script)", err)
	}
	ops.UseOpenBLAS()
	ops.SetThreads(o.threads)
	var benches []*benchmark
	for _, name := range strings.Split(o.models, ",") {
		switch strings.TrimSpace(name) {
		case "convnet":
			benches = append(benches, &benchmark{name: fmt.Sprintf("convnet BiCyc Stage I step, 1x28x28, batch %d", o.convBatch),
				arch: models.ArchConvNet, bicyc: true, steps: o.convSteps, batch: o.convBatch, classes: o.convClasses, channels: 1, side: 28})
		case "resnet18":
			benches = append(benches, &benchmark{name: fmt.Sprintf("ResNet-18 backbone + CE step, 3x32x32, batch %d", o.resnetBatch),
				arch: models.ArchResNet18, steps: o.resnetSteps, batch: o.resnetBatch, classes: o.resnetClasses, channels: 3, side: 32})
		default:
			return fmt.Errorf("--models: unknown benchmark %q, want convnet or resnet18", name)
		}
	}
	tmp, err := os.MkdirTemp("", "bicyc-bench-train-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	loadStart, err := compare.LoadAverage()
	if err != nil {
		return err
	}
	torchVersion := ""
	for _, b := range benches {
		if torchVersion, err = b.run(o, filepath.Join(tmp, b.arch)); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
	}
	loadEnd, err := compare.LoadAverage()
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "## Training step: bicyc vs PyTorch %s, %s\n\n", torchVersion, time.Now().Format("2006-01-02 15:04"))
	fmt.Fprintf(out, "%d threads each (bicyc: models/ops goroutines, single-threaded OpenBLAS; torch.set_num_threads); %d CPUs; load average %s at start, %s at end\n",
		o.threads, runtime.NumCPU(), loadStart, loadEnd)
	fmt.Fprintf(out, "PyTorch's OpenMP threads run with OMP_WAIT_POLICY=%q (empty: libgomp's default)\n", o.ompWait)
	fmt.Fprintf(out, "images/s: median of %d interleaved rounds; a step is forward, backward and SGD update (momentum 0.9, weight decay 5e-4, clip 1.0)\n\n", o.rounds)
	t := compare.Table{Header: []string{"benchmark", "bicyc img/s", "PyTorch img/s", "bicyc / PyTorch",
		"bicyc img/CPU-s", "PyTorch img/CPU-s", "bicyc peak RSS (MB)", "PyTorch peak RSS (MB)", "img/s by round: bicyc ; PyTorch"}}
	for _, b := range benches {
		ours, torch := compare.Median(b.ours), compare.Median(b.torch)
		t.Add(b.name, fmt.Sprintf("%.0f", ours), fmt.Sprintf("%.0f", torch), fmt.Sprintf("%.2f", ours/torch),
			fmt.Sprintf("%.0f", compare.Median(b.oursCPU)), fmt.Sprintf("%.0f", compare.Median(b.torchCPU)),
			fmt.Sprintf("%.0f", compare.MB(b.oursRSS)), fmt.Sprintf("%.0f", compare.MB(b.torchRSS)),
			roundList(b.ours)+" ; "+roundList(b.torch))
	}
	t.Write(out)
	fmt.Fprintln(out)
	p := compare.Table{Header: []string{"same network: loss terms of step 1, same weights and batch", "bicyc", "PyTorch", "relative difference"}}
	for _, b := range benches {
		for i, name := range b.termNames {
			p.Add(b.arch+" "+name, fmt.Sprintf("%.6g", b.oursTerms[i]), fmt.Sprintf("%.6g", b.torchTerms[i]),
				fmt.Sprintf("%.1e", relDiff(b.oursTerms[i], b.torchTerms[i])))
		}
	}
	p.Write(out)
	return nil
}

// profiles holds the CPU profile samples of every timed round: the Go
// profiler writes one profile per Start/Stop, so each round writes its own
// file, path.N, and `go tool pprof path.*` merges them.
var profiles int

func resumeProfile(path string) error {
	profiles++
	f, err := os.Create(fmt.Sprintf("%s.%d", path, profiles))
	if err != nil {
		return err
	}
	// The file stays open until the process exits: StopCPUProfile flushes it.
	return pprof.StartCPUProfile(f)
}

// writeHeapProfile writes the heap profile of the memory in use now, while
// the step's graph is still alive.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func roundList(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, " ")
}

func relDiff(a, b float64) float64 { return math.Abs(a-b) / max(math.Abs(b), 1e-6) }

// run builds both sides of b with the same initial weights and batches
// (written to dir for PyTorch), checks that the first step's loss terms
// agree, then times interleaved rounds. It returns PyTorch's version.
func (b *benchmark) run(o options, dir string) (string, error) {
	fmt.Fprintf(os.Stderr, "%s\n", b.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	n, err := b.newNets()
	if err != nil {
		return "", err
	}
	images, labels, err := b.batches()
	if err != nil {
		return "", err
	}
	statePath, batchPath := filepath.Join(dir, "state.safetensors"), filepath.Join(dir, "batches.safetensors")
	if err := safetensors.WriteFile(statePath, netsState(n), nil); err != nil {
		return "", err
	}
	floatLabels := make([]float32, len(labels))
	for i, l := range labels {
		floatLabels[i] = float32(l)
	}
	if err := safetensors.WriteFile(batchPath, []safetensors.Tensor{
		{Name: "images", Shape: []int{len(labels), b.channels, b.side, b.side}, Data: images},
		{Name: "labels", Shape: []int{len(labels)}, Data: floatLabels},
	}, nil); err != nil {
		return "", err
	}

	runtime.GC()
	debug.FreeOSMemory()
	if err := compare.ResetPeakRSS(); err != nil {
		return "", err
	}
	cfg := b.config()
	step, err := train.NewStage1Step(cfg, n, train.Stage1Input{Batch: b.batch, Channels: b.channels, Height: b.side, Width: b.side})
	if err != nil {
		return "", err
	}
	defer step.Close()
	args := []string{o.script, "serve", "--arch", b.arch, "--state", statePath, "--batches", batchPath,
		"--batch", fmt.Sprint(b.batch), "--threads", fmt.Sprint(o.threads)}
	if b.bicyc {
		args = append(args, "--bicyc")
	}
	var hello struct {
		Torch   string
		Threads int
	}
	var env []string
	if o.ompWait != "" {
		env = append(env, "OMP_WAIT_POLICY="+o.ompWait)
	}
	py, err := compare.StartWorker(&hello, env, args...)
	if err != nil {
		return "", err
	}
	defer py.Close()
	if hello.Threads != o.threads {
		return "", fmt.Errorf("PyTorch runs %d threads, want %d", hello.Threads, o.threads)
	}

	// Step 1 on both sides from the same weights and batch: the loss terms
	// must agree, or the two sides do not train the same network.
	b.termNames = step.Terms()
	if b.oursTerms, err = b.ourSteps(step, cfg.Train.LR, images, labels, 0, 1); err != nil {
		return "", err
	}
	var first struct {
		Losses map[string]float64
	}
	if err := py.Call(map[string]any{"op": "steps", "first": 0, "steps": 1}, &first); err != nil {
		return "", err
	}
	for i, name := range b.termNames {
		v, ok := first.Losses[name]
		if !ok {
			return "", fmt.Errorf("PyTorch reported no loss term %q (it has %v)", name, first.Losses)
		}
		b.torchTerms = append(b.torchTerms, v)
		if relDiff(b.oursTerms[i], v) > 1e-2 {
			return "", fmt.Errorf("step 1 loss %s: bicyc %.6g, PyTorch %.6g: the two sides do not compute the same step", name, b.oursTerms[i], v)
		}
	}

	next := 1
	for r := range o.rounds {
		fmt.Fprintf(os.Stderr, "  round %d/%d\n", r+1, o.rounds)
		cpu, err := compare.CPUTime()
		if err != nil {
			return "", err
		}
		if o.cpuProfile != "" {
			if err := resumeProfile(o.cpuProfile); err != nil {
				return "", err
			}
		}
		start := time.Now()
		if _, err := b.ourSteps(step, cfg.Train.LR, images, labels, next, b.steps); err != nil {
			return "", err
		}
		wall := time.Since(start)
		pprof.StopCPUProfile()
		cpuEnd, err := compare.CPUTime()
		if err != nil {
			return "", err
		}
		imgs := float64(b.steps * b.batch)
		b.ours = append(b.ours, imgs/wall.Seconds())
		b.oursCPU = append(b.oursCPU, imgs/(cpuEnd-cpu).Seconds())
		var reply struct {
			Seconds    float64
			CPUSeconds float64 `json:"cpu_seconds"`
			PeakRSSKiB int64   `json:"peak_rss_kib"`
		}
		if err := py.Call(map[string]any{"op": "steps", "first": next, "steps": b.steps}, &reply); err != nil {
			return "", err
		}
		if !(reply.Seconds > 0) || !(reply.CPUSeconds > 0) {
			return "", fmt.Errorf("PyTorch reply %+v", reply)
		}
		b.torch = append(b.torch, imgs/reply.Seconds)
		b.torchCPU = append(b.torchCPU, imgs/reply.CPUSeconds)
		b.torchRSS = reply.PeakRSSKiB << 10
		next += b.steps
	}
	if b.oursRSS, err = compare.PeakRSS(); err != nil {
		return "", err
	}
	if o.memProfile != "" {
		if err := writeHeapProfile(o.memProfile + "." + b.arch); err != nil {
			return "", err
		}
	}
	return hello.Torch, nil
}

// config is the training configuration of b's step: config.Default's
// (docs/method.md's loss weights, SGD momentum, weight decay and clipping); the
// plain step has no anti-collapse term, so it is backbone + head + CE.
func (b *benchmark) config() config.Config {
	cfg := config.Default()
	cfg.Loss.AntiCollapse = b.bicyc
	return cfg
}

// ourSteps runs steps training steps at learning rate lr on the kept
// batches first, first+1, ... (cycled) and returns the loss terms of the
// last one.
func (b *benchmark) ourSteps(step *train.Stage1Step, lr float64, images []float32, labels []int, first, steps int) ([]float64, error) {
	size := b.channels * b.side * b.side
	var terms []float64
	for s := range steps {
		k := (first + s) % batchesKept
		var err error
		if terms, err = step.Run(images[k*b.batch*size:(k+1)*b.batch*size], labels[k*b.batch:(k+1)*b.batch], lr); err != nil {
			return nil, fmt.Errorf("step %d: %w", first+s+1, err)
		}
	}
	return terms, nil
}

// newNets returns b's networks with fixed-seed initial weights: a new
// backbone and head and, for the BiCyc step, a frozen old backbone, a
// distiller and an adapter of docs/method.md's shapes (mlp mappers S -> 32S -> S).
func (b *benchmark) newNets() (train.Stage1Nets, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	var n train.Stage1Nets
	var err error
	if n.Backbone, err = models.NewBackbone(b.arch, b.channels, featureDim, rng); err != nil {
		return n, err
	}
	n.Head = models.NewLinear(featureDim, b.classes, true, rng)
	if !b.bicyc {
		return n, nil
	}
	if n.Old, err = models.NewBackbone(b.arch, b.channels, featureDim, rng); err != nil {
		return n, err
	}
	if n.Distiller, err = models.NewMapper(models.MapperMLP, featureDim, models.DefaultHiddenMult, rng); err != nil {
		return n, err
	}
	n.Adapter, err = models.NewMapper(models.MapperMLP, featureDim, models.DefaultHiddenMult, rng)
	return n, err
}

// netsState returns every network's tensors under the prefixes
// bench/train_torch.py reads: backbone., head., old., distiller., adapter.
func netsState(n train.Stage1Nets) []safetensors.Tensor {
	s := models.WithPrefix("backbone.", n.Backbone.State())
	s = append(s, n.Head.State("head.")...)
	if n.Old != nil {
		s = append(s, models.WithPrefix("old.", n.Old.State())...)
		s = append(s, models.WithPrefix("distiller.", n.Distiller.State())...)
		s = append(s, models.WithPrefix("adapter.", n.Adapter.State())...)
	}
	return s
}

// batches returns batchesKept batches of images (NCHW float32, normalised)
// and their labels. convnet: real Fashion-MNIST training images of the
// first task's classes 0..classes-1, normalised as training does
// (data.DefaultNormalization). resnet18: fixed-seed standard normal images
// with labels i mod classes (CIFAR-100 cannot be downloaded here, and the
// step's speed does not depend on pixel values).
func (b *benchmark) batches() ([]float32, []int, error) {
	n := batchesKept * b.batch
	size := b.channels * b.side * b.side
	images := make([]float32, n*size)
	labels := make([]int, n)
	if b.arch != models.ArchConvNet {
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range images {
			images[i] = float32(rng.NormFloat64())
		}
		for i := range labels {
			labels[i] = i % b.classes
		}
		return images, labels, nil
	}
	train, _, err := data.LoadFashionMNIST("")
	if err != nil {
		return nil, nil, err
	}
	classes := make([]int, b.classes)
	for i := range classes {
		classes[i] = i
	}
	idx := train.Subset(classes)
	if len(idx) < n {
		return nil, nil, fmt.Errorf("%d Fashion-MNIST training images of classes %v, want %d", len(idx), classes, n)
	}
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	p := data.Preprocess{Channels: 1, Height: b.side, Width: b.side, Mean: mean, Std: std}
	for i, j := range idx[:n] {
		p.Normalize(train.Image(j), images[i*size:(i+1)*size])
		labels[i] = train.Labels[j]
	}
	return images, labels, nil
}
