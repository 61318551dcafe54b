package train

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/lockfile"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/names"
	"github.com/bicyc/bicyc/rundir"
)

// Run is one training run: a configuration, its data and task stream, a run
// directory, and the state carried from task to task. Create one with New
// or Resume, then call Execute. Not safe for concurrent use.
type Run struct {
	dir         string
	cfg         config.Config
	train, test *data.Dataset
	stream      data.TaskStream
	prep        imaging.Preprocess
	augment     data.Augment
	state       *State
	log         *logger
	progress    io.Writer
	stopAfter   int
	// learned are the tasks added by Learn, in order.
	learned []rundir.LearnedTask
	// lock is the run's writer lock (rundir.Lock), nil for a run opened
	// read-only (Open); lockCtx is cancelled if another process takes it
	// over.
	lock    *lockfile.Lock
	lockCtx context.Context
}

// State is everything a run carries from one task to the next; with the
// prototypes it is the only memory of old tasks.
type State struct {
	// Completed is the number of finished tasks.
	Completed int
	Backbone  *models.Backbone
	// Adapter is the last task's A (old -> new space); nil until a task > 1
	// with transport has finished.
	Adapter *models.Mapper
	// Prototypes maps a class id to its Gaussian in the current feature space.
	Prototypes map[int]gauss.Gaussian
	// ClassCounts maps a class id to its number of training images.
	ClassCounts map[int]int
	// Reports holds one entry per completed task.
	Reports []rundir.TaskReport
	// heldOut are the held-out features the checkpoint stores for the
	// export's calibration (Run.heldOutFeatures); nil without a
	// validation split.
	heldOut *heldOut
}

// Options are the run-time settings that are not part of the
// configuration: where output goes.
type Options struct {
	// Log receives the run log in addition to the run directory's log.txt; nil means stderr.
	Log io.Writer
	// Progress receives progress bars; nil means none.
	Progress io.Writer
	// StopAfter ends Execute once this many tasks of the stream are
	// complete (0: run them all); the run can be resumed later.
	StopAfter int
	// Wait is how long New, Fork, Rescore and Resume wait for the run's
	// lock while another process writes the run (0: fail at once, naming
	// it).
	Wait time.Duration
}

// New creates the run directory dir (which must not hold a run already),
// loads the data, draws the task stream and initialises the backbone. The
// directory is created only once all of that has succeeded: a
// configuration that fails, here or in cfg.Validate, leaves nothing behind.
func New(cfg config.Config, dir string, opts Options) (*Run, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, err := prepareRun(cfg, dir, opts)
	if err != nil {
		return nil, err
	}
	if err := names.CheckNew(nil, r.train.ClassNames); err != nil {
		return nil, fmt.Errorf("%s: %w", r.train.Source, err)
	}
	var order []int
	if len(cfg.Stream.ClassOrder) > 0 {
		order = cfg.Stream.ClassOrder
	}
	stream, err := data.NewTaskStream(r.train.NumClasses(), cfg.Stream.Tasks, cfg.Stream.FirstTask, order, cfg.Stream.OrderSeed)
	if err != nil {
		return nil, fmt.Errorf("stream.tasks %d, stream.first_task %d, stream.class_order (%d entries) for the %d classes of the data: %w",
			cfg.Stream.Tasks, cfg.Stream.FirstTask, len(cfg.Stream.ClassOrder), r.train.NumClasses(), err)
	}
	r.stream = stream
	b, err := initialBackbone(cfg, r.rng("init", 0))
	if err != nil {
		return nil, err
	}
	r.state = &State{Backbone: b, Prototypes: map[int]gauss.Gaussian{}, ClassCounts: map[int]int{}}
	if err := r.createDir(opts); err != nil {
		return nil, err
	}
	// stream.json first: config.yaml marks a run that can be resumed.
	if err := durable.WriteJSON(filepath.Join(dir, rundir.StreamFile), r.streamRecord()); err != nil {
		return r.fail(err)
	}
	if err := writeConfig(filepath.Join(dir, rundir.ConfigFile), cfg); err != nil {
		return r.fail(err)
	}
	r.log.printf("run %s: %s on %s, %d tasks, seed %d", dir, cfg.Method, cfg.Data.Kind, len(stream.Tasks), cfg.Seed)
	r.log.printf("kernels: %s", kernels.Current())
	r.logDevice()
	if cfg.Model.Pretrained != "" {
		r.log.printf("backbone %s: pretrained weights from %s (the 1x1 reduction starts random), %d of %d stages frozen",
			cfg.Model.Backbone, cfg.Model.Pretrained, b.FrozenStages(), b.Stages())
	}
	r.log.printf("task stream:\n%s", stream.Format(r.train.ClassNames))
	return r, nil
}

// prepareRun checks that dir holds no run yet and loads the data, writing
// nothing: the start New and Fork share. createDir comes once everything
// else is known to work.
func prepareRun(cfg config.Config, dir string, opts Options) (*Run, error) {
	if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err == nil {
		return nil, fmt.Errorf("%s already holds a run: resume it (train.Resume), or choose another run name (run_name)", dir)
	}
	if _, _, err := trainingDevice(cfg); err != nil {
		return nil, err
	}
	r := &Run{dir: dir, cfg: cfg, progress: opts.Progress, stopAfter: opts.StopAfter}
	useCPU(cfg.Threads)
	if err := r.loadData(); err != nil {
		return nil, err
	}
	return r, nil
}

// createDir creates the run directory, takes its lock, and opens its log,
// which then lists the files the image folders skipped. Two processes
// starting the same run: the second waits for the lock or fails, and then
// finds the first's run.
func (r *Run) createDir(opts Options) error {
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return err
	}
	if err := r.takeLock(opts); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(r.dir, rundir.ConfigFile)); err == nil {
		r.Close()
		return fmt.Errorf("%s already holds a run: resume it (train.Resume), or choose another run name (run_name)", r.dir)
	}
	if err := r.openLog(opts.Log); err != nil {
		r.Close()
		return err
	}
	r.logData()
	return nil
}

// fail closes a run that could not be set up, releasing its lock, and
// returns err.
func (r *Run) fail(err error) (*Run, error) {
	r.Close()
	return nil, err
}

// takeLock takes the run's writer lock (rundir.Lock).
func (r *Run) takeLock(opts Options) error {
	status := opts.Log
	if status == nil {
		status = os.Stderr
	}
	l, ctx, err := rundir.Lock(r.dir, opts.Wait, status)
	if err != nil {
		return err
	}
	r.lock, r.lockCtx = l, ctx
	return nil
}

// logData writes to the run log what loading the data noted: the files the
// image folders skipped and the memory photos kept for random resized
// crops take.
func (r *Run) logData() {
	for _, ds := range []*data.Dataset{r.train, r.test} {
		for _, skipped := range ds.Skipped {
			r.log.printf("skipped %s", skipped)
		}
	}
	if p := r.train.Photos; p != nil {
		r.log.printf("training images kept at load resolution for random resized crops: %d images, %.1f MiB", p.Len(), float64(p.Bytes())/(1<<20))
	}
}

// Resume reopens the run in dir after its last completed task, with the
// configuration and task stream it was started with, to train or learn
// on: it takes the run's lock (rundir.Lock; another writer is waited for up
// to opts.Wait, else an error names it), removes the temporary files a
// killed writer left (rundir.RemoveTemp) and appends to its log. Close
// releases the lock.
func Resume(dir string, opts Options) (*Run, error) {
	return openRun(dir, opts, true)
}

// Open opens the run in dir as Resume does, to read it only (evaluate it,
// export it elsewhere): it takes no lock and writes nothing into dir, so a
// read-only run directory opens, and the log goes to opts.Log alone.
func Open(dir string, opts Options) (*Run, error) {
	return openRun(dir, opts, false)
}

func openRun(dir string, opts Options, write bool) (_ *Run, err error) {
	cfg, err := config.ReadRun(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	if _, _, err := trainingDevice(cfg); err != nil {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	r := &Run{dir: dir, cfg: cfg, progress: opts.Progress, stopAfter: opts.StopAfter}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	useCPU(cfg.Threads)
	if !write {
		r.log = newLogger(nil, opts.Log)
	} else {
		if err := r.takeLock(opts); err != nil {
			return nil, err
		}
		removed, err := rundir.RemoveTemp(dir)
		if err != nil {
			return nil, err
		}
		if err := r.openLog(opts.Log); err != nil {
			return nil, err
		}
		for _, path := range removed {
			r.log.printf("removed %s, left by a writer that was killed", path)
		}
	}
	r.logDevice()
	rec, err := rundir.ReadStream(dir)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	r.stream = data.TaskStream{Order: rec.Order, Tasks: rec.Tasks}
	if err := r.loadData(); err != nil {
		return nil, err
	}
	r.logData()
	for _, task := range rec.Learned {
		train, test, err := r.loadLearned(task)
		if err != nil {
			return nil, fmt.Errorf("resume %s: learned task %d: %w", dir, task.Task+1, err)
		}
		if err := r.appendLearned(task, train, test); err != nil {
			return nil, err
		}
		r.learned = append(r.learned, task)
	}
	st, err := loadLatestCheckpoint(dir, cfg)
	if err != nil {
		return nil, err
	}
	if st == nil {
		b, err := initialBackbone(cfg, r.rng("init", 0))
		if err != nil {
			return nil, err
		}
		st = &State{Backbone: b, Prototypes: map[int]gauss.Gaussian{}, ClassCounts: map[int]int{}}
	}
	r.state = st
	for _, w := range names.Warnings(r.train.ClassNames) {
		r.log.printf("warning: %s", w)
	}
	r.log.printf("resuming %s after task %d of %d", dir, st.Completed, len(r.stream.Tasks))
	r.log.printf("kernels: %s", kernels.Current())
	return r, nil
}

// Dir is the run directory.
func (r *Run) Dir() string { return r.dir }

// Config is the run's configuration.
func (r *Run) Config() config.Config { return r.cfg }

// State is the state after the last completed task.
func (r *Run) State() *State { return r.state }

// Stream is the run's task stream.
func (r *Run) Stream() data.TaskStream { return r.stream }

// Close releases the run's log file and its lock. It is safe to call
// more than once.
func (r *Run) Close() error {
	err := r.log.close()
	if lerr := r.lock.Release(); err == nil {
		err = lerr
	}
	return err
}

// Execute trains every remaining task of the stream, evaluating and
// checkpointing after each, and writes the run's metrics. It stops between
// steps when ctx is cancelled; the last checkpoint stays valid.
func (r *Run) Execute(ctx context.Context) error {
	// A kill between a checkpoint and its metrics leaves metrics one task
	// behind: bring them up to date with the checkpoint first.
	if r.state.Completed > 0 {
		if err := r.writeMetrics(); err != nil {
			return err
		}
	}
	for t := r.state.Completed; t < len(r.stream.Tasks); t++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.lockLost(); err != nil {
			return err
		}
		if r.stopAfter > 0 && t >= r.stopAfter {
			r.log.printf("stopping after task %d of %d (resume to continue)", t, len(r.stream.Tasks))
			return nil
		}
		rep, err := r.learnTaskWith(ctx, t)
		if err != nil {
			if r.state.Completed == 0 {
				return fmt.Errorf("task %d: %w (no task completed: the run directory has no checkpoint yet)", t+1, err)
			}
			return fmt.Errorf("task %d: %w (the run directory keeps the checkpoint of task %d)", t+1, err, r.state.Completed)
		}
		r.state.Reports = append(r.state.Reports, rep)
		r.state.Completed = t + 1
		// Checkpoints store prototypes in float32; rounding the live ones
		// the same way makes a resumed run continue from exactly the state
		// an uninterrupted one has.
		roundPrototypes(r.state.Prototypes)
		if r.state.heldOut, err = r.heldOutFeatures(r.state); err != nil {
			return fmt.Errorf("checkpoint after task %d: %w", t+1, err)
		}
		if err := saveCheckpoint(r.dir, r.state); err != nil {
			return fmt.Errorf("checkpoint after task %d: %w", t+1, err)
		}
		if err := r.writeMetrics(); err != nil {
			return err
		}
	}
	r.log.printf("%s", r.summaryTable())
	return nil
}

// lockLost returns the cause when another process took the run's lock
// over (it judged this one dead), nil otherwise.
func (r *Run) lockLost() error {
	if r.lockCtx != nil && r.lockCtx.Err() != nil {
		return context.Cause(r.lockCtx)
	}
	return nil
}

// learnTaskWith runs learnTask under the configuration task t was learned
// with (LearnOptions.Config), when it has one of its own.
func (r *Run) learnTaskWith(ctx context.Context, t int) (rundir.TaskReport, error) {
	for _, l := range r.learned {
		if l.Task == t && l.Config != nil {
			saved := r.cfg
			r.cfg = *l.Config
			useCPU(r.cfg.Threads)
			defer func() { r.cfg = saved }()
		}
	}
	return r.learnTask(ctx, t)
}

// logDevice writes the training device and why it was chosen to the run log.
func (r *Run) logDevice() {
	if device, note, err := trainingDevice(r.cfg); err == nil {
		r.log.printf("device: %s (%s)", device, note)
	}
}

// useCPU makes the training kernels use OpenBLAS and the given number of
// threads (0: all cores). OpenBLAS also serves gonum's float64 BLAS
// (blas64), which package gauss computes with: class statistics, Monte Carlo
// transport, classifier scores in evaluation. Gonum's own Go kernels run
// those products several times slower, and with thousands of classes the
// scores of the evaluation are most of a task's cost beside Stage I
// (docs/results/learn-classes.md).
func useCPU(threads int) {
	ops.UseOpenBLAS()
	blas64.Use(netlib.Implementation{})
	ops.SetThreads(threads)
}

// loadData opens the configured dataset and sets the preprocessing.
func (r *Run) loadData() error {
	d := r.cfg.Data
	r.prep = preprocessFor(r.cfg)
	src := data.Source{Kind: d.Kind, Dir: d.Dir, TrainDir: d.TrainDir, TestDir: d.TestDir, Channels: d.Channels, Height: d.Height, Width: d.Width,
		ResizeMode: r.prep.ResizeMode, ResizeShorter: r.prep.ResizeShorter, LoadSide: loadSide(r.cfg, r.prep), SkipUnreadable: d.SkipUnreadable}
	train, test, err := data.Open(src)
	if err != nil {
		return err
	}
	if train.Channels != d.Channels || train.Height != d.Height || train.Width != d.Width {
		return fmt.Errorf("data %s: images are %dx%dx%d, the config says data.channels %d, data.height %d, data.width %d",
			train.Source, train.Channels, train.Height, train.Width, d.Channels, d.Height, d.Width)
	}
	r.train, r.test = train, test
	r.augment = data.Augment{CropPadding: d.CropPadding, HorizontalFlip: d.HorizontalFlip, TrivialAugment: d.TrivialAugment}
	if d.RandomResizedCrop {
		r.augment.ResizedCrop = data.ResizedCrop{Scale: [2]float64(d.ResizedCropScale), Ratio: [2]float64(d.ResizedCropRatio)}
	}
	return r.prep.Validate()
}

// rng returns the random source for one purpose of one task, derived from
// the run's seed only, so that seeds really vary the run and a resumed run
// draws what an uninterrupted one would.
func (r *Run) rng(purpose string, task int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(r.seed(purpose, task)), 0))
}

func (r *Run) seed(purpose string, task int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", r.cfg.Seed, purpose, task)
	return int64(h.Sum64() >> 1)
}

// streamRecord is the run's stream.json.
func (r *Run) streamRecord() rundir.Stream {
	return rundir.Stream{Order: r.stream.Order, Tasks: r.stream.Tasks, ClassNames: r.train.ClassNames, Learned: r.learned}
}

// ClassNames are the dataset's class names, indexed by class id.
func (r *Run) ClassNames() []string { return r.train.ClassNames }

// Preprocess is the test-time preprocessing of the run.
func (r *Run) Preprocess() imaging.Preprocess { return r.prep }

func toFloat32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }
