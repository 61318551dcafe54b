package train

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/metrics"
	"github.com/bicyc/bicyc/rundir"
)

// Summary computes the run's metrics from the reports of the completed tasks.
func (r *Run) Summary() (rundir.Summary, error) { return summarize(r.cfg, r.stream.Tasks, r.state) }

// summarize computes the metrics of state st, whose reports are the first
// st.Completed tasks of tasks.
func summarize(cfg config.Config, tasks [][]int, st *State) (rundir.Summary, error) {
	counts := make([]int, len(tasks))
	for i, t := range tasks {
		counts[i] = len(t)
	}
	tag, err := metrics.NewMatrix(counts)
	if err != nil {
		return rundir.Summary{}, err
	}
	taw, _ := metrics.NewMatrix(counts)
	for _, rep := range st.Reports {
		if err := tag.AddStep(rep.TAg); err != nil {
			return rundir.Summary{}, err
		}
		if err := taw.AddStep(rep.TAw); err != nil {
			return rundir.Summary{}, err
		}
	}
	s := rundir.Summary{Method: cfg.Method, Seed: cfg.Seed, Completed: st.Completed, Tasks: len(tasks),
		Reports: st.Reports, MatrixTAg: tag, MatrixTAw: taw}
	if tag.Steps() > 0 {
		s.TAg, s.TAw = rundir.MetricsOf(tag), rundir.MetricsOf(taw)
	}
	return s, nil
}

// writeMetrics writes metrics.json, metrics.csv (one row per task) and the
// accuracy matrices acc_tag.csv and acc_taw.csv into the run directory.
func (r *Run) writeMetrics() error {
	s, err := r.Summary()
	if err != nil {
		return err
	}
	if err := durable.WriteJSON(filepath.Join(r.dir, rundir.MetricsFile), s); err != nil {
		return err
	}
	for name, m := range map[string]*metrics.Matrix{"acc_tag.csv": s.MatrixTAg, "acc_taw.csv": s.MatrixTAw} {
		var b bytes.Buffer
		if err := m.WriteCSV(&b); err != nil {
			return err
		}
		if err := durable.WriteFile(filepath.Join(r.dir, name), b.Bytes()); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"task", "classes", "a_last_tag", "a_inc_tag", "f_last_tag", "a_last_taw", "a_inc_taw", "f_last_taw",
		"stage1_seconds", "stage1_images_per_second", "stage2_seconds", "transport_seconds", "evaluation_seconds",
		"mu_l2", "sigma_frobenius", "sym_kl", "ad_percent"})
	tag, taw := metrics.Curve(s.MatrixTAg, metrics.OldTasks), metrics.Curve(s.MatrixTAw, metrics.OldTasks)
	for t, rep := range s.Reports {
		row := []string{fmt.Sprint(rep.Task), joinInts(rep.Classes),
			f4(tag[t].ALast), f4(tag[t].AInc), f4(tag[t].FLast),
			f4(taw[t].ALast), f4(taw[t].AInc), f4(taw[t].FLast),
			f4(rep.Stage1Seconds), f4(rep.Stage1ImagesPerS), f4(rep.Stage2Seconds), f4(rep.TransportSeconds), f4(rep.EvaluationSeconds)}
		if d := rep.Drift; d != nil {
			ad := ""
			if d.ADPercent != nil {
				ad = f4(*d.ADPercent)
			}
			row = append(row, f4(d.MeanL2), f4(d.CovFrobenius), f4(d.SymmetricKL), ad)
		} else {
			row = append(row, "", "", "", "")
		}
		w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(r.dir, "metrics.csv"), b.Bytes())
}

// summaryTableTasks is the most tasks whose accuracy matrix summaryTable
// prints: a run of thousands of classes in tasks of ten has hundreds of
// tasks, and its matrix (a cell per pair of tasks) would fill megabytes of
// the log at the end of every train and learn; acc_tag.csv holds it.
const summaryTableTasks = 20

// summaryTable renders the end-of-run table: the TAg accuracy matrix (up to
// summaryTableTasks tasks) and the paper's metrics in percent.
func (r *Run) summaryTable() string {
	s, err := r.Summary()
	if err != nil || s.MatrixTAg.Steps() == 0 {
		return "no completed task"
	}
	var b strings.Builder
	if s.Tasks > summaryTableTasks {
		fmt.Fprintf(&b, "\n%s, seed %d: %d tasks; the accuracy matrix (TAg) is in acc_tag.csv\n", s.Method, s.Seed, s.Tasks)
	} else {
		fmt.Fprintf(&b, "\n%s, seed %d: accuracy (%%) on each task's test set after each task (TAg)\n", s.Method, s.Seed)
		b.WriteString("after \\ on")
		for u := range s.Tasks {
			fmt.Fprintf(&b, " %6s", fmt.Sprintf("T%d", u+1))
		}
		b.WriteString("\n")
		for t := 0; t < s.MatrixTAg.Steps(); t++ {
			fmt.Fprintf(&b, "%-10s", fmt.Sprintf("T%d", t+1))
			for u := 0; u <= t; u++ {
				fmt.Fprintf(&b, " %6.1f", 100*s.MatrixTAg.At(t, u))
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "\n%-4s %8s %8s %8s\n", "", "A_last", "A_inc", "F_last")
	fmt.Fprintf(&b, "%-4s %8.2f %8.2f %8.2f\n", "TAg", 100*s.TAg.ALast, 100*s.TAg.AInc, 100*s.TAg.FLast)
	fmt.Fprintf(&b, "%-4s %8.2f %8.2f %8.2f\n", "TAw", 100*s.TAw.ALast, 100*s.TAw.AInc, 100*s.TAw.FLast)
	var s1, s2, tr, ev, imgs float64
	for _, rep := range s.Reports {
		s1 += rep.Stage1Seconds
		s2 += rep.Stage2Seconds
		tr += rep.TransportSeconds
		ev += rep.EvaluationSeconds
		imgs += rep.Stage1ImagesPerS * rep.Stage1Seconds
	}
	fmt.Fprintf(&b, "\ntime: stage I %.0fs (%.0f img/s), stage II %.0fs, transport %.0fs, evaluation %.0fs\n", s1, imgs/max(s1, 1e-9), s2, tr, ev)
	return b.String()
}

func f4(v float64) string { return fmt.Sprintf("%.4f", v) }

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, " ")
}
