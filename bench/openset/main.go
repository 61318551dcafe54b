package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/train"
)

// options are the command's flags.
type options struct {
	out, work, configFile string
	seeds, adds           []int
	unknown               int // classes held out of training per seed
	quick, learn, render  bool
	reuse, kinds          bool
	near                  bool // the near study of issue 45 on the runs in work
}

func main() {
	// First: it may restart the program once with OpenBLAS's kernels for this processor.
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/openset: warning:", err)
	}
	var o options
	var seeds, adds string
	flag.StringVar(&o.out, "out", "docs/results/openset", "directory for results.json and README.md")
	flag.StringVar(&o.work, "work", "", "working directory for data, runs and models (default: a new temporary one, removed at the end)")
	flag.StringVar(&o.configFile, "config", "", "YAML file of configuration keys over the defaults (data and stream keys are set by the experiment)")
	flag.StringVar(&seeds, "seeds", "0,1,2", "comma-separated seeds")
	flag.StringVar(&adds, "add", "10,50,200", "comma-separated training images per new class")
	flag.BoolVar(&o.quick, "quick", false, "use the quick profile (minutes per seed; numbers for a smoke test only)")
	flag.BoolVar(&o.learn, "learn", true, "also learn the new classes with bicyc learn (trains one task per --add value)")
	flag.BoolVar(&o.render, "render", false, "only rewrite README.md from the results.json in --out (no training)")
	flag.BoolVar(&o.reuse, "reuse", false, "reuse the runs a former call trained in --work (export them again; train only the seeds without a run)")
	flag.IntVar(&o.unknown, "unknown", 2, "classes held out of training per seed (2 to 4): the last one or two are the near test unknowns, a third and fourth (from the end) the near validation ones, never trained and never in the test")
	flag.BoolVar(&o.kinds, "kinds", true, "also measure every unknown score on near, shifted and far unknown images (validation and test splits)")
	flag.BoolVar(&o.near, "near", false, "only the near study (issue 45): score candidate unknown scores on the runs a former call trained in --work with --unknown 3 or 4; writes near.json and near.md into --out (with --render: rewrites near.md)")
	flag.Parse()
	var err error
	if o.seeds, err = ints(seeds); err == nil {
		o.adds, err = ints(adds)
	}
	if err == nil && (o.unknown < 2 || o.unknown > 4) {
		err = fmt.Errorf("--unknown %d: want 2 to 4 held-out classes", o.unknown)
	}
	switch {
	case err == nil && o.near && o.render:
		err = renderNear(o.out)
	case err == nil && o.near && o.work == "":
		err = errors.New("--near reads the runs in --work: name it")
	case err == nil && o.near:
		err = runNear(o, os.Stderr)
	case err == nil && o.render:
		err = render(o.out)
	case err == nil:
		err = run(context.Background(), o, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/openset:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q: want comma-separated non-negative integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// run measures every seed and writes the results.
func run(ctx context.Context, o options, log io.Writer) error {
	base, err := baseConfig(o)
	if err != nil {
		return err
	}
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("", "bicyc-openset-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	trainSet, testSet, err := data.LoadFashionMNIST("")
	if err != nil {
		return err
	}
	var results []seedResult
	info := startRun(os.Args[1:])
	for _, seed := range o.seeds {
		res, err := measureSeed(ctx, o, base, seedData{train: trainSet, test: testSet, seed: seed,
			dir: filepath.Join(work, fmt.Sprintf("seed%d", seed))}, log)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		results = append(results, res)
		// Written after every seed: a long run that stops keeps what finished.
		info.finish()
		if err := writeResults(o.out, report{Config: base, ConfigFile: o.configFile, Run: info, Results: results}); err != nil {
			return err
		}
	}
	return nil
}

// baseConfig is the defaults, the --config file and --quick.
func baseConfig(o options) (config.Config, error) {
	cfg := config.Default()
	if o.configFile != "" {
		raw, err := os.ReadFile(o.configFile)
		if err != nil {
			return cfg, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return cfg, fmt.Errorf("%s: %w", o.configFile, err)
		}
	}
	cfg.Quick = cfg.Quick || o.quick
	return cfg, nil
}

// seedConfig is the run configuration of one seed over the image folders
// in dir: Fashion-MNIST's geometry and normalisation, the known classes in
// tasks of 2 (3 in the first when their count is odd) in a class order
// drawn from the seed.
func seedConfig(base config.Config, seed int, dir string, known int) config.Config {
	cfg := base
	cfg.Seed = int64(seed)
	cfg.Data.Kind = data.KindImageFolder
	cfg.Data.Dir = ""
	cfg.Data.TrainDir, cfg.Data.TestDir = filepath.Join(dir, "train"), filepath.Join(dir, "test")
	cfg.Data.Channels, cfg.Data.Height, cfg.Data.Width = 1, 28, 28
	cfg.Data.Mean, cfg.Data.Std = []float64{0.2860}, []float64{0.3530}
	cfg.Stream = config.Stream{Tasks: known / 2, OrderSeed: int64(seed)}
	if known%2 == 1 {
		cfg.Stream.FirstTask = 3
	}
	cfg.Export.Enabled = false // exported explicitly
	return cfg.Resolved()
}

// heldOut draws the n unknown classes of a seed: the last n of a
// permutation of the ten. The last two are the same for every n, so the
// near test classes stay those of the two-class study.
func heldOut(seed, n int) (known, unknown []int) {
	perm := rand.New(rand.NewPCG(uint64(seed), 17)).Perm(10)
	return perm[:10-n], perm[10-n:]
}

// report is what results.json holds and README.md is rendered from.
type report struct {
	Config     config.Config `json:"config"`
	ConfigFile string        `json:"config_file,omitempty"`
	Run        runInfo       `json:"run"`
	Results    []seedResult  `json:"results"`
}

// writeResults writes results.json and README.md into dir.
func writeResults(dir string, rep report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(dir, "results.json"), append(raw, '\n')); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, "README.md"), []byte(markdown(rep)))
}

// render rewrites dir/README.md from dir/results.json.
func render(dir string) error {
	path := filepath.Join(dir, "results.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(rep.Results) == 0 {
		return fmt.Errorf("%s: no results", path)
	}
	return durable.WriteFile(filepath.Join(dir, "README.md"), []byte(markdown(rep)))
}

// newRun trains cfg in dir.
func newRun(ctx context.Context, cfg config.Config, dir string, log io.Writer) error {
	r, err := train.New(cfg, dir, train.Options{Log: log})
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Execute(ctx)
}
