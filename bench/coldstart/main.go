// Command coldstart scores classifiers over the prototypes of finished runs,
// checkpoint by checkpoint, on the validation (or test) split, without
// retraining: the classifier side of the cold-start study
// (docs/results/cold-start.md).
//
//	go run ./bench/coldstart --runs runs/cold/default-s0,runs/cold/default-s1 --out val.json
//
// For every run and every checkpoint after task t it computes the features
// of the split's images of tasks 1..t once (as they are and mirrored) and
// scores every variant (variants.go) on them; the accuracy matrices give
// A_last, A_inc and F_last as metrics.json computes them, TAg beside TAw.
// --oracle adds diagnostics at the last checkpoint that read the training
// images of old classes (never a method; see oracle.go).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/metrics"
	"github.com/bicyc/bicyc/train"
)

// Result is one variant on one run: accuracy matrices (fractions) and the
// summary numbers (percent).
type Result struct {
	Run, Variant string
	TAg, TAw     [][]float64
	ALast, AInc  float64
	FLast        float64
	TAwALast     float64
	ALastPerTask []float64
}

func main() {
	runs := flag.String("runs", "", "comma-separated run directories")
	split := flag.String("split", "val", "val or test")
	only := flag.String("variants", "", "comma-separated variant names (default: all)")
	out := flag.String("out", "", "JSON file of every result (appended runs replace their earlier entries)")
	oracle := flag.Bool("oracle", false, "diagnostics at the last checkpoint that read old training images (never a method)")
	flag.Parse()
	if *runs == "" {
		log.Fatal("--runs is required")
	}
	sp := train.Split(*split)
	if sp != train.SplitVal && sp != train.SplitTest {
		log.Fatalf("--split %q: want val or test", *split)
	}
	vs := variants()
	if *only != "" {
		want := strings.Split(*only, ",")
		vs = slices.DeleteFunc(vs, func(v variant) bool { return !slices.Contains(want, v.name) })
	}
	var all []Result
	if *out != "" {
		if b, err := os.ReadFile(*out); err == nil {
			if err := json.Unmarshal(b, &all); err != nil {
				log.Fatalf("%s: %v", *out, err)
			}
		}
	}
	for _, dir := range strings.Split(*runs, ",") {
		res, err := study(dir, sp, vs, *oracle)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range res {
			all = slices.DeleteFunc(all, func(o Result) bool { return o.Run == r.Run && o.Variant == r.Variant })
			all = append(all, r)
			fmt.Printf("%-28s %-26s A_last %6.2f  A_inc %6.2f  F_last %6.2f  TAw %6.2f  per task %s\n",
				r.Run, r.Variant, r.ALast, r.AInc, r.FLast, r.TAwALast, pct(r.ALastPerTask))
		}
		if *out != "" {
			b, _ := json.MarshalIndent(all, "", " ")
			if err := os.WriteFile(*out, b, 0o644); err != nil {
				log.Fatal(err)
			}
		}
	}
}

func pct(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(s, "/")
}

// study scores every variant on every checkpoint of the run in dir.
func study(dir string, split train.Split, vs []variant, oracle bool) ([]Result, error) {
	run, err := train.Resume(dir, train.Options{Log: io.Discard})
	if err != nil {
		return nil, err
	}
	defer run.Close()
	tasks := run.Stream().Tasks
	last := run.State().Completed
	counts := make([]int, len(tasks[:last]))
	for u := range counts {
		counts[u] = len(tasks[u])
	}
	tag := make([]*metrics.Matrix, len(vs))
	taw := make([]*metrics.Matrix, len(vs))
	for i := range vs {
		tag[i], _ = metrics.NewMatrix(counts)
		taw[i], _ = metrics.NewMatrix(counts)
	}
	for t := 1; t <= last; t++ {
		if err := run.LoadTask(t); err != nil {
			return nil, err
		}
		z, labels, err := run.SplitFeatures(split, t, true)
		if err != nil {
			return nil, err
		}
		protos, ids, ages, err := run.SeenPrototypes(t)
		if err != nil {
			return nil, err
		}
		in := input{protos: protos, ids: ids, ages: ages, tasks: tasks[:t], z: z, n: len(labels), s: run.Config().Model.FeatureDim, labels: labels, seed: uint64(run.Config().Seed)*1000 + uint64(t), memo: map[string][]float32{}}
		for i, v := range vs {
			scores, err := v.score(in)
			if err != nil {
				return nil, fmt.Errorf("%s: task %d: %s: %w", dir, t, v.name, err)
			}
			ag, aw := accuracies(in, scores)
			if err := tag[i].AddStep(ag); err != nil {
				return nil, err
			}
			if err := taw[i].AddStep(aw); err != nil {
				return nil, err
			}
		}
		if oracle && t == last {
			if err := oracleDiagnostics(run, in); err != nil {
				return nil, err
			}
		}
	}
	var out []Result
	for i, v := range vs {
		r := Result{Run: dir, Variant: v.name, TAg: rows(tag[i]), TAw: rows(taw[i]),
			ALast: 100 * metrics.ALast(tag[i]), AInc: 100 * metrics.AInc(tag[i]),
			FLast: 100 * metrics.FLast(tag[i], metrics.OldTasks), TAwALast: 100 * metrics.ALast(taw[i])}
		for _, a := range r.TAg[len(r.TAg)-1] {
			r.ALastPerTask = append(r.ALastPerTask, 100*a)
		}
		out = append(out, r)
	}
	return out, nil
}

func rows(m *metrics.Matrix) [][]float64 {
	out := make([][]float64, m.Steps())
	for t := range out {
		for u := 0; u <= t; u++ {
			out[t] = append(out[t], m.At(t, u))
		}
	}
	return out
}

// accuracies returns TAg and TAw accuracy per task of scores [n, K]
// (smaller is closer), classes in in.ids order.
func accuracies(in input, scores []float32) (tag, taw []float64) {
	k := len(in.ids)
	pos := map[int]int{}
	for i, c := range in.ids {
		pos[c] = i
	}
	taskOf := map[int]int{}
	for u, cs := range in.tasks {
		for _, c := range cs {
			taskOf[c] = u
		}
	}
	okAg := make([]float64, len(in.tasks))
	okAw := make([]float64, len(in.tasks))
	n := make([]float64, len(in.tasks))
	for i, want := range in.labels {
		u := taskOf[want]
		row := scores[i*k : (i+1)*k]
		best, bestAw := -1, -1
		for c := range k {
			if best < 0 || row[c] < row[best] {
				best = c
			}
			if taskOf[in.ids[c]] == u && (bestAw < 0 || row[c] < row[bestAw]) {
				bestAw = c
			}
		}
		n[u]++
		if best == pos[want] {
			okAg[u]++
		}
		if bestAw == pos[want] {
			okAw[u]++
		}
	}
	for u := range n {
		okAg[u] /= n[u]
		okAw[u] /= n[u]
	}
	return okAg, okAw
}
