package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/rundir"
)

// BenchmarkLearnClasses measures what learning one more task costs a run
// that already holds K old classes, step by step, through the code `bicyc
// learn` runs (docs/results/learn-classes.md):
//
//	transport-linear   transportAffine: every old Gaussian through the affine map (exact)
//	transport-adapter  Run.transport: Monte Carlo through the adapter A, adapter.transport_samples per class
//	classifier         Run.classifier: gauss.NewClassifier over all K+10 classes
//	evaluate           Run.evaluateSplit on the test set: index bookkeeping, backbone features, scores, predictions
//	indices-per-task   each task's test images found by its own pass over the labels (evaluation before)
//	indices-one-pass   all tasks' test images in one pass (Dataset.Subsets, evaluation now); 100 test images per class
//	checkpoint-save    saveCheckpoint: backbone, adapter, prototypes.safetensors, state.json (with K/10 task reports)
//	checkpoint-load    LoadCheckpoint of that checkpoint
//	metrics            Run.writeMetrics: metrics.json, the accuracy matrices, metrics.csv (K/10+1 tasks)
//	export             exportRun: the model directory (checkpoint read, classifier, ONNX graphs, bundle)
//	export-calibrated  exportRun with a validation split of one image per class: the calibration too
//
// The run is the default configuration (convnet, S = 64, mlp adapter of
// hidden width 2048) with K old classes in tasks of 10 and a new task of
// 10; its prototypes are perturbed copies of 10 Gaussians estimated from
// low-rank-plus-noise features, its test set 2 random images per class.
// The costs do not depend on the values, only on K and the shapes. Sizes
// come from BICYC_BENCH_CLASSES (default "100,1000"); the Monte Carlo step
// transports at most BICYC_BENCH_TRANSPORT classes (default 200: every class
// is the same independent loop iteration) and reports seconds per 1000
// classes like every step; BICYC_BENCH_SAMPLES sets adapter.transport_samples
// (default 2000; the configurations of the larger datasets use the authors'
// 10,000). Run one size per process, under nice, with
// -benchtime 1x:
//
//	BICYC_BENCH_CLASSES=1000 GOMAXPROCS=2 nice -n 15 go test -run '^$' -bench LearnClasses -benchtime 1x ./train/
func BenchmarkLearnClasses(b *testing.B) {
	sizes := benchSizes(b, "BICYC_BENCH_CLASSES", "100,1000")
	maxTransport := benchSizes(b, "BICYC_BENCH_TRANSPORT", "200")[0]
	b.Logf("kernels: %s", kernels.Current())
	for _, k := range sizes {
		fx := newClassesFixture(b, k)
		benchTransport(b, fx, k, maxTransport)
		benchClassify(b, fx, k)
		benchTestIndices(b, fx, k)
		benchCheckpoint(b, fx, k)
		benchExport(b, fx, k)
		ckpt := checkpointDir(fx.run.dir, fx.run.state.Completed)
		b.Logf("K=%d: checkpoint %s (state.json %s, %d task reports), metrics.json %s, acc_tag.csv %s, model directory %s", k, dirSize(b, ckpt),
			dirSize(b, filepath.Join(ckpt, "state.json")), len(fx.run.state.Reports), dirSize(b, filepath.Join(fx.run.dir, "metrics.json")),
			dirSize(b, filepath.Join(fx.run.dir, "acc_tag.csv")), dirSize(b, filepath.Join(fx.run.dir, "model")))
	}
}

// benchStep runs f as the sub-benchmark K=k/name and reports its seconds
// per 1000 of classes and its CPU seconds per operation.
func benchStep(b *testing.B, k int, name string, classes int, f func(b *testing.B)) {
	b.Run(fmt.Sprintf("K=%d/%s", k, name), func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU(b)
		f(b)
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(classes)*1000, "s/1000classes")
		// CPU time (the copies made outside the timer included): other
		// processes on a shared machine distort it far less than wall time.
		b.ReportMetric((processCPU(b)-cpu)/float64(b.N), "cpu-s/op")
	})
}

// benchTransport: the K old classes through the affine map, and at most
// maxTransport of them through the adapter.
func benchTransport(b *testing.B, fx *classesFixture, k, maxTransport int) {
	benchStep(b, k, "transport-linear", k, func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			protos := fx.oldPrototypes(k)
			b.StartTimer()
			if err := transportAffine(fx.affine, protos); err != nil {
				b.Fatal(err)
			}
		}
	})
	n := min(k, maxTransport)
	benchStep(b, k, "transport-adapter", n, func(b *testing.B) {
		aMap, done, err := mapperFunc(fx.run.state.Adapter, fx.s, 1000)
		if err != nil {
			b.Fatal(err)
		}
		defer done()
		for range b.N {
			b.StopTimer()
			protos := fx.oldPrototypes(n)
			b.StartTimer()
			if err := fx.run.transport(1, aMap, protos); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchClassify: the classifier over all K+10 classes, and the evaluation
// on the test set.
func benchClassify(b *testing.B, fx *classesFixture, k int) {
	last := len(fx.run.stream.Tasks) - 1
	benchStep(b, k, "classifier", k+10, func(b *testing.B) {
		for range b.N {
			if _, err := fx.run.classifier(fx.run.stream.Order, last); err != nil {
				b.Fatal(err)
			}
		}
	})
	benchStep(b, k, "evaluate", k+10, func(b *testing.B) {
		for range b.N {
			ev, err := fx.run.evaluateSplit(fx.run.state.Backbone, last, SplitTest)
			if err != nil {
				b.Fatal(err)
			}
			if len(ev.Predictions) != 2*(k+10) {
				b.Fatalf("%d predictions, want %d", len(ev.Predictions), 2*(k+10))
			}
		}
	})
}

// benchTestIndices: which test images each task has, for a test set of 100
// images per class (labels only): per task, as evaluation did before, and
// in one pass, as it does now.
func benchTestIndices(b *testing.B, fx *classesFixture, k int) {
	labels := &Run{cfg: fx.run.cfg, stream: fx.run.stream, test: &data.Dataset{ClassNames: fx.run.test.ClassNames}}
	for c := range k + 10 {
		for range 100 {
			labels.test.Labels = append(labels.test.Labels, c)
		}
	}
	benchStep(b, k, "indices-per-task", k+10, func(b *testing.B) {
		for range b.N {
			for _, classes := range labels.stream.Tasks {
				labels.testIndices(classes)
			}
		}
	})
	benchStep(b, k, "indices-one-pass", k+10, func(b *testing.B) {
		for range b.N {
			for _, sub := range labels.test.Subsets(labels.stream.Tasks) {
				labels.testSubset(sub)
			}
		}
	})
}

// benchCheckpoint: saving and loading the checkpoint, and writing the metrics.
func benchCheckpoint(b *testing.B, fx *classesFixture, k int) {
	benchStep(b, k, "checkpoint-save", k+10, func(b *testing.B) {
		for range b.N {
			if err := saveCheckpoint(fx.run.dir, fx.run.state); err != nil {
				b.Fatal(err)
			}
		}
	})
	benchStep(b, k, "checkpoint-load", k+10, func(b *testing.B) {
		for range b.N {
			st, err := loadLatestCheckpoint(fx.run.dir, fx.run.cfg)
			if err != nil {
				b.Fatal(err)
			}
			if len(st.Prototypes) != k+10 {
				b.Fatalf("%d prototypes, want %d", len(st.Prototypes), k+10)
			}
		}
	})
	benchStep(b, k, "metrics", k+10, func(b *testing.B) {
		for range b.N {
			if err := fx.run.writeMetrics(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchExport: exporting the model directory, without and with a
// validation split to calibrate on.
func benchExport(b *testing.B, fx *classesFixture, k int) {
	benchStep(b, k, "export", k+10, func(b *testing.B) {
		for range b.N {
			if err := exportRun(fx.run.dir, filepath.Join(fx.run.dir, "model"), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	benchStep(b, k, "export-calibrated", k+10, func(b *testing.B) {
		// With a validation split (1 of each class's 2 images) export
		// also fits the calibration on the held-out features of every
		// class, which the checkpoint stores.
		cal := *fx.run
		cal.dir = b.TempDir()
		cal.cfg.Data.ValPerClass = 1
		if err := writeConfig(filepath.Join(cal.dir, "config.yaml"), cal.cfg); err != nil {
			b.Fatal(err)
		}
		if err := durable.WriteJSON(filepath.Join(cal.dir, "stream.json"), cal.streamRecord()); err != nil {
			b.Fatal(err)
		}
		st := *cal.state
		var err error
		if st.heldOut, err = cal.heldOutFeatures(&st); err != nil {
			b.Fatal(err)
		}
		if err := saveCheckpoint(cal.dir, &st); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if err := exportRun(cal.dir, filepath.Join(cal.dir, "model"), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// classesFixture is a run after K old classes and a new task of 10, saved
// in a temporary run directory (config.yaml, stream.json).
type classesFixture struct {
	run    *Run
	s      int
	protos map[int]gauss.Gaussian // the state's prototypes, kept unmoved
	affine gauss.Affine
}

func newClassesFixture(b *testing.B, k int) *classesFixture {
	b.Helper()
	useCPU(0)
	cfg := config.Default()
	cfg.Data.ValPerClass = 0 // export then needs no training data (no calibration)
	if v := os.Getenv("BICYC_BENCH_SAMPLES"); v != "" {
		cfg.Adapter.TransportSamples = benchSizes(b, "BICYC_BENCH_SAMPLES", "")[0]
	}
	s := cfg.Model.FeatureDim
	rng := rand.New(rand.NewPCG(3, uint64(k)))
	total := k + 10
	names := make([]string, total)
	order := make([]int, total)
	var tasks [][]int
	for c := range total {
		names[c], order[c] = fmt.Sprintf("class-%05d", c), c
		if c%10 == 0 {
			tasks = append(tasks, nil)
		}
		tasks[len(tasks)-1] = append(tasks[len(tasks)-1], c)
	}
	const side, perClass = 28, 2
	test := &data.Dataset{Name: "synthetic", Channels: 1, Height: side, Width: side, Source: "synthetic", ClassNames: names,
		Pixels: make([]uint8, total*perClass*side*side)}
	for i := range test.Pixels {
		test.Pixels[i] = uint8(rng.IntN(256))
	}
	for c := range total {
		for range perClass {
			test.Labels = append(test.Labels, c)
		}
	}
	backbone, err := initialBackbone(cfg, rng)
	if err != nil {
		b.Fatal(err)
	}
	adapter, err := models.NewMapper(mapperKind(cfg.Model), s, cfg.Model.HiddenMult, rng)
	if err != nil {
		b.Fatal(err)
	}
	base := baseGaussians(b, rng, 10, s)
	protos := make(map[int]gauss.Gaussian, total)
	counts := make(map[int]int, total)
	for c := range total {
		protos[c] = perturbed(base[c%len(base)], rng)
		counts[c] = 6000
	}
	roundPrototypes(protos)
	reports := make([]rundir.TaskReport, len(tasks))
	for t := range tasks {
		reports[t] = rundir.TaskReport{Task: t + 1, Classes: tasks[t], TAg: make([]float64, t+1), TAw: make([]float64, t+1),
			Losses: map[string]float64{"ce": 0.1, "ac": 0.1}, Transport: &rundir.TransportChoice{Map: MapLinear}}
	}
	dir := b.TempDir()
	r := &Run{dir: dir, cfg: cfg, train: test, test: test, prep: preprocessFor(cfg),
		stream: data.TaskStream{Order: order, Tasks: tasks},
		state:  &State{Completed: len(tasks), Backbone: backbone, Adapter: adapter, Prototypes: protos, ClassCounts: counts, Reports: reports}}
	if err := writeConfig(filepath.Join(dir, "config.yaml"), cfg); err != nil {
		b.Fatal(err)
	}
	if err := durable.WriteJSON(filepath.Join(dir, "stream.json"), r.streamRecord()); err != nil {
		b.Fatal(err)
	}
	// A linear map fitted on 2000 feature pairs, as chooseTransport fits it.
	const rows = 2000
	x := make([]float32, rows*s)
	y := make([]float32, rows*s)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		y[i] = x[i] + 0.1*float32(rng.NormFloat64())
	}
	affine, err := gauss.FitAffine(x, y, rows, s, affineRidge)
	if err != nil {
		b.Fatal(err)
	}
	return &classesFixture{run: r, s: s, protos: protos, affine: affine}
}

// oldPrototypes returns deep copies of the prototypes of the first n classes.
func (fx *classesFixture) oldPrototypes(n int) map[int]gauss.Gaussian {
	out := make(map[int]gauss.Gaussian, n)
	for c := range n {
		g := fx.protos[c]
		out[c] = gauss.Gaussian{Mean: append([]float64(nil), g.Mean...), Cov: mat.NewSymDense(g.Dim(), append([]float64(nil), g.Cov.RawSymmetric().Data...))}
	}
	return out
}

// baseGaussians estimates n class Gaussians from 500 rows each of
// low-rank-plus-noise features: a decaying spectrum and a ReLU-like
// positive mean, the shape of a trained backbone's class statistics.
func baseGaussians(b *testing.B, rng *rand.Rand, n, s int) []gauss.Gaussian {
	const rows, rank = 500, 16
	out := make([]gauss.Gaussian, n)
	for c := range out {
		load := make([]float64, rank*s)
		for i := range load {
			load[i] = rng.NormFloat64() / math.Sqrt(float64(1+i/s))
		}
		mean := make([]float64, s)
		for j := range mean {
			mean[j] = math.Abs(rng.NormFloat64())
		}
		x := make([]float32, rows*s)
		for r := range rows {
			f := make([]float64, rank)
			for i := range f {
				f[i] = rng.NormFloat64()
			}
			for j := range s {
				v := mean[j] + 0.05*rng.NormFloat64()
				for i := range rank {
					v += 0.1 * f[i] * load[i*s+j]
				}
				x[r*s+j] = float32(v)
			}
		}
		g, err := gauss.Estimate(x, rows, s)
		if err != nil {
			b.Fatal(err)
		}
		out[c] = g
	}
	return out
}

// perturbed returns g with a shifted mean and a rescaled covariance.
func perturbed(g gauss.Gaussian, rng *rand.Rand) gauss.Gaussian {
	s := g.Dim()
	mean := make([]float64, s)
	for j := range mean {
		mean[j] = g.Mean[j] + 0.1*rng.NormFloat64()
	}
	cov := mat.NewSymDense(s, nil)
	cov.ScaleSym(0.5+rng.Float64(), g.Cov)
	return gauss.Gaussian{Mean: mean, Cov: cov}
}

// benchSizes parses the comma-separated positive integers of the
// environment variable name, or def when it is unset.
func benchSizes(b *testing.B, name, def string) []int {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want comma-separated positive integers", name, v)
		}
		out = append(out, n)
	}
	return out
}

// processCPU returns the user and system CPU time the process has used.
func processCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// dirSize is the total size of the files under dir (or of the file dir), in
// MB ("none" when it does not exist: a -bench pattern skipped the step that writes it).
func dirSize(b *testing.B, dir string) string {
	if _, err := os.Stat(dir); err != nil {
		return "none"
	}
	var total int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("%.1f MB", float64(total)/1e6)
}

// BenchmarkAdapterChunk maps 16,000 feature rows through the default mlp
// adapter (64 -> 2048 -> 64, GELU) with mapperFunc's evaluation graph at
// several chunk sizes: whether the Monte Carlo transport would gain from
// pushing many classes' samples through A as larger matrix products
// (Run.transport uses chunks of 1000 rows, two per class at
// adapter.transport_samples 2000). Reports microseconds per row, wall and CPU.
func BenchmarkAdapterChunk(b *testing.B) {
	useCPU(0)
	cfg := config.Default()
	s := cfg.Model.FeatureDim
	rng := rand.New(rand.NewPCG(1, 2))
	a, err := models.NewMapper(mapperKind(cfg.Model), s, cfg.Model.HiddenMult, rng)
	if err != nil {
		b.Fatal(err)
	}
	const n = 16000
	x := make([]float32, n*s)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, chunk := range []int{250, 1000, 4000, 16000} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			f, done, err := mapperFunc(a, s, chunk)
			if err != nil {
				b.Fatal(err)
			}
			defer done()
			if _, err := f(x, n); err != nil { // the first run allocates the graph's buffers
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu := processCPU(b)
			for range b.N {
				if _, err := f(x, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/n*1e6, "us/row")
			b.ReportMetric((processCPU(b)-cpu)/float64(b.N)/n*1e6, "cpu-us/row")
		})
	}
}

// BenchmarkResumeConcat joins the datasets of L learned tasks (10 classes
// of 50 28x28 images each) onto a base of 10 classes, one task after the
// other, as Resume does before every `bicyc learn` of a run grown by L
// learns: the time to hold every learned image again, beside decoding the
// image folders.
func BenchmarkResumeConcat(b *testing.B) {
	const classes, perClass, side = 10, 50, 28
	part := func(name string) *data.Dataset {
		d := &data.Dataset{Name: name, Channels: 1, Height: side, Width: side, Source: name,
			Pixels: make([]uint8, classes*perClass*side*side)}
		for c := range classes {
			d.ClassNames = append(d.ClassNames, fmt.Sprintf("%s-%d", name, c))
			for range perClass {
				d.Labels = append(d.Labels, c)
			}
		}
		return d
	}
	for _, tasks := range []int{100, 500} {
		parts := make([]*data.Dataset, tasks)
		for i := range parts {
			parts[i] = part(fmt.Sprintf("task%d", i))
		}
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				all := part("base")
				for _, p := range parts {
					var err error
					if all, err = concat(all, p, len(all.ClassNames)); err != nil {
						b.Fatal(err)
					}
				}
				if all.Len() != (tasks+1)*classes*perClass {
					b.Fatalf("%d images", all.Len())
				}
			}
		})
	}
}
