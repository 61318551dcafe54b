package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/metrics"
	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/sweep"
)

// fakeRun describes a hand-made run directory: what train would have
// written for a run with these accuracy matrices.
type fakeRun struct {
	variant  sweep.Variant
	seed     int64
	counts   []int       // classes per task
	tag, taw [][]float64 // recorded rows; fewer than len(counts) for a stopped run
	val      [][]float64 // validation TAg rows (TaskReport.ValTAg); nil for none
	drift    bool        // record drift diagnostics
	// trainedIn is the run that trained task 1 for a forked run
	// (metrics.json reports[0].trained_in), "" otherwise.
	trainedIn string
	// rescoredFrom is the run that trained every task of a rescored run
	// (every report's trained_in), "" otherwise.
	rescoredFrom string
}

// name is the run directory name a sweep gives the run.
func (f fakeRun) name() string {
	return f.variant.RunName(f.seed)
}

// config is the run's resolved configuration, as a sweep over the default
// config would make it.
func (f fakeRun) config(out string) config.Config {
	c := config.Default()
	c.Method, c.Seed = f.variant.Method, f.seed
	c.Loss.Bi, c.Loss.Cyc = f.variant.Bi, f.variant.Cyc
	c.Stream.Tasks = len(f.counts)
	c.RunDir, c.RunName = out, f.name()
	c.Export.Enabled = false
	return c
}

// summary builds metrics.json the way train.Run.Summary does.
func (f fakeRun) summary(t *testing.T) rundir.Summary {
	t.Helper()
	tag, err := metrics.NewMatrix(f.counts)
	if err != nil {
		t.Fatal(err)
	}
	taw, _ := metrics.NewMatrix(f.counts)
	s := rundir.Summary{Method: f.variant.Method, Seed: f.seed, Completed: len(f.tag), Tasks: len(f.counts), MatrixTAg: tag, MatrixTAw: taw}
	for i := range f.tag {
		if err := tag.AddStep(f.tag[i]); err != nil {
			t.Fatal(err)
		}
		if err := taw.AddStep(f.taw[i]); err != nil {
			t.Fatal(err)
		}
		rep := rundir.TaskReport{Task: i + 1, TAg: f.tag[i], TAw: f.taw[i], Stage1Seconds: 10, Stage2Seconds: 2, EvaluationSeconds: 1}
		if i == 0 {
			rep.TrainedIn = f.trainedIn
		}
		if f.rescoredFrom != "" {
			rep.TrainedIn = f.rescoredFrom
		}
		if f.val != nil {
			rep.ValTAg = f.val[i]
		}
		if f.drift {
			d := &rundir.Drift{MeanL2: 0.5 * float64(i+1), CovFrobenius: 0.2 * float64(i+1), SymmetricKL: 10 * float64(i+1) * float64(i+1)}
			if i > 0 {
				ad := 50 + float64(f.seed)
				d.ADPercent = &ad
			}
			rep.Drift = d
		}
		s.Reports = append(s.Reports, rep)
	}
	if len(f.tag) > 0 {
		s.TAg, s.TAw = metricSetOf(tag), metricSetOf(taw)
	}
	return s
}

func metricSetOf(m *metrics.Matrix) rundir.MetricSet {
	ms := rundir.MetricSet{ALast: metrics.ALast(m), AInc: metrics.AInc(m), FLast: metrics.FLast(m, metrics.OldTasks)}
	for t := 0; t < m.Steps(); t++ {
		ms.Steps = append(ms.Steps, metrics.ALastAt(m, t))
	}
	return ms
}

// write creates the run directory under out and returns its path.
func (f fakeRun) write(t *testing.T, out string) string {
	t.Helper()
	dir := filepath.Join(out, f.name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(f.config(out))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "config.yaml"), y)
	j, err := json.MarshalIndent(f.summary(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "metrics.json"), j)
	return dir
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// threeTasks returns a finished 3-task run (2 classes per task) whose TAg
// rows are base + the seed's offset, TAw rows 0.1 higher.
func threeTasks(v sweep.Variant, seed int64, offset float64, drift bool) fakeRun {
	tag := [][]float64{{0.9 + offset}, {0.6 + offset, 0.8 + offset}, {0.4 + offset, 0.5 + offset, 0.7 + offset}}
	var taw [][]float64
	for _, row := range tag {
		var r []float64
		for _, a := range row {
			r = append(r, min(a+0.05, 1))
		}
		taw = append(taw, r)
	}
	return fakeRun{variant: v, seed: seed, counts: []int{2, 2, 2}, tag: tag, taw: taw, drift: drift}
}

var (
	full     = sweep.Variant{Method: config.MethodBicyc, Bi: true, Cyc: true}
	noBi     = sweep.Variant{Method: config.MethodBicyc, Bi: false, Cyc: true}
	noCyc    = sweep.Variant{Method: config.MethodBicyc, Bi: true, Cyc: false}
	noBoth   = sweep.Variant{Method: config.MethodBicyc, Bi: false, Cyc: false}
	adagauss = sweep.Variant{Method: config.MethodAdaGauss, Bi: true, Cyc: true}
	finetune = sweep.Variant{Method: config.MethodFinetune, Bi: true, Cyc: true}
)

// fakeSweep writes the runs of a 3-seed sweep of bicyc and adagauss with
// the ablation grid, and its sweep.json; bicyc is 0.02 per seed above
// adagauss, the ablations below bicyc.
func fakeSweep(t *testing.T, out string) (sweep.Spec, []fakeRun) {
	t.Helper()
	spec := sweep.Spec{Config: "configs/fmnist-t5.yaml", Out: out, Seeds: 3, Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss}, Ablation: true}
	offsets := map[sweep.Variant]float64{full: 0.04, adagauss: 0, noBi: 0.01, noCyc: 0.02, noBoth: -0.01}
	var runs []fakeRun
	for _, p := range spec.Plan() {
		f := threeTasks(p.Variant, p.Seed, offsets[p.Variant]+0.01*float64(p.Seed), true)
		f.write(t, out)
		runs = append(runs, f)
	}
	rec := &sweep.Record{Spec: spec}
	for i, p := range spec.Plan() {
		rec.Runs = append(rec.Runs, sweep.RunRecord{Name: p.Name, Method: p.Variant.Method, Seed: p.Seed, Ablation: p.Variant.Tag(),
			LossBi: p.Variant.Bi, LossCyc: p.Variant.Cyc, Status: sweep.StatusFinished, WallSeconds: 60 + float64(i)})
	}
	if err := durable.WriteJSON(filepath.Join(out, sweep.RecordFile), rec); err != nil {
		t.Fatal(err)
	}
	return spec, runs
}
