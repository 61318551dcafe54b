package main

import (
	"fmt"
	"io"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/train"
)

// printOracleGap prints bicyc eval --oracle: A_last on split with the
// stored prototypes, with the old classes' oracle means, and with their
// oracle means and covariances (train.Run.OraclePrototypes), then the
// stored-to-oracle mean shift of every old class.
func printOracleGap(w io.Writer, run *train.Run, c gauss.ClassifierOptions, split train.Split) error {
	oracle, classes, err := run.OraclePrototypes()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "split: %s (oracle gap diagnostic: old classes' training images read under the final backbone)\n", split)
	printClassifier(w, c)
	fmt.Fprintf(w, "%-22s %9s %9s %12s %10s %10s\n", "prototypes", "TAg A_last", "TAw A_last", "cross-task", "to older", "to newer")
	rows := []struct {
		name   string
		protos int // 0 stored, 1 oracle means, 2 oracle means and covariances
	}{{"stored", 0}, {"oracle means", 1}, {"oracle means+cov", 2}}
	for _, row := range rows {
		protos := run.State().Prototypes
		if row.protos > 0 {
			protos = run.WithOracle(oracle, row.protos == 2)
		}
		ev, err := run.EvaluatePrototypes(c, split, protos)
		if err != nil {
			return err
		}
		tc := run.Confusion(ev, split)
		ag, aw := classWeighted(ev.TAg, run.Stream().Tasks), classWeighted(ev.TAw, run.Stream().Tasks)
		fmt.Fprintf(w, "%-22s %9.2f %9.2f %11.1f%% %9.1f%% %9.1f%%\n", row.name, 100*ag, 100*aw,
			100*tc.CrossTask(), 100*float64(tc.ToOlder)/float64(max(tc.Errors, 1)), 100*float64(tc.ToNewer)/float64(max(tc.Errors, 1)))
	}
	fmt.Fprintf(w, "\n%-6s %-6s %10s %10s %10s\n", "class", "task", "|dmu|", "spread", "|dmu|/spr")
	for _, o := range classes {
		fmt.Fprintf(w, "%-6d %-6d %10.4f %10.4f %10.3f\n", o.ID, o.Task, o.MeanShift, o.Spread, o.Relative())
	}
	return nil
}

// printConfusion prints where the task-agnostic errors go.
func printConfusion(w io.Writer, tc train.TaskConfusion) error {
	_, err := fmt.Fprintf(w, "TAg errors: %d of %d images; %.1f%% to another task's class (%d to an older task, %d to a newer one)\n",
		tc.Errors, tc.Images, 100*tc.CrossTask(), tc.ToOlder, tc.ToNewer)
	return err
}

// classWeighted is the class-count-weighted mean of per-task accuracies.
func classWeighted(acc []float64, tasks [][]int) float64 {
	var sum, n float64
	for u, a := range acc {
		k := float64(len(tasks[u]))
		sum += k * a
		n += k
	}
	return sum / n
}
