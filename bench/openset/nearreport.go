package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/infer"
)

// nearEval is one score's measurement on one seed.
type nearEval struct {
	// Validation and Test are the detections per kind (near, shifted,
	// far-photos, far-synthetic, far) among the split's known images.
	Validation map[string]detection `json:"validation"`
	Test       map[string]detection `json:"test"`
	// Accepted is the share of known test images at most the threshold
	// the "ref" images give for the asked rate; FarRejected and
	// NearRejected the shares of far and near test images above it.
	Accepted     float64 `json:"known_accepted"`
	FarRejected  float64 `json:"far_rejected"`
	NearRejected float64 `json:"near_rejected"`
}

// nearSeed is one seed's near study.
type nearSeed struct {
	Seed          int                 `json:"seed"`
	NearVal       []string            `json:"near_validation_classes"`
	NearTest      []string            `json:"near_test_classes"`
	AcceptRate    float64             `json:"accept_rate"`
	KnownAccuracy float64             `json:"known_accuracy"`
	Images        map[string]int      `json:"images"`
	Scores        map[string]nearEval `json:"scores"`
	// GoCost is the Go-side time per image of each score family, on top
	// of the backbone passes (mean over every image of the seed).
	GoCost map[string]string `json:"go_cost_per_image"`
}

// nearReport is near.json.
type nearReport struct {
	Command string     `json:"command"`
	Run     runInfo    `json:"run"`
	Seeds   []nearSeed `json:"seeds"`
	// Passes are p50 times of one image (batch 1) on the model of the first
	// seed: model.onnx as infer classifies, the backbone with its pooled
	// stages, and the four turns of an image as one batch.
	Passes map[string]string `json:"passes_p50_batch1"`
}

// nearKinds are the kinds the study reports.
var nearKinds = []string{kindNear, kindShifted, kindFarPhotos, kindFarSynthetic, kindFar}

// evaluate measures one score's values on one seed.
func evaluate(v scoreValues, acceptRate float64) nearEval {
	e := nearEval{Validation: map[string]detection{}, Test: map[string]detection{}}
	for _, split := range []string{splitValidation, splitTest} {
		known := v[split+"/known"]
		for _, kind := range nearKinds {
			u := v[split+"/"+kind]
			if kind == kindFar {
				u = slices.Concat(v[split+"/"+kindFarPhotos], v[split+"/"+kindFarSynthetic])
			}
			d := detect(known, u)
			if split == splitValidation {
				e.Validation[kind] = d
			} else {
				e.Test[kind] = d
			}
		}
	}
	ref := slices.Sorted(slices.Values(v["ref"]))
	threshold := ref[min(len(ref)-1, int(math.Ceil(acceptRate*float64(len(ref))))-1)]
	e.Accepted = 1 - fractionAbove(v[splitTest+"/known"], threshold)
	e.FarRejected = fractionAbove(slices.Concat(v[splitTest+"/"+kindFarPhotos], v[splitTest+"/"+kindFarSynthetic]), threshold)
	e.NearRejected = fractionAbove(v[splitTest+"/"+kindNear], threshold)
	return e
}

// runNear is the --near study over o.seeds.
func runNear(o options, log io.Writer) error {
	rep := nearReport{Command: "go run ./bench/openset " + strings.Join(os.Args[1:], " "), Run: startRun(os.Args[1:])}
	for _, seed := range o.seeds {
		dir := filepath.Join(o.work, fmt.Sprintf("seed%d", seed))
		l := seedLayout(dir)
		_, unknown := heldOut(seed, o.unknown)
		nf, err := nearFeaturesOf(l, seed, unknown, log)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		fmt.Fprintf(log, "seed %d: near study: scoring\n", seed)
		scores, cost, err := nearScoreSet(nf, l.model, seed)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		addCombinations(scores)
		ns := nearSeed{Seed: seed, NearVal: nf.NearVal, NearTest: nf.NearTest, AcceptRate: nf.AcceptRate,
			Images: map[string]int{}, Scores: map[string]nearEval{}, GoCost: map[string]string{}}
		for name, set := range nf.Sets {
			ns.Images[name] = len(set)
		}
		right, all := 0, 0
		for _, split := range []string{splitValidation, splitTest} {
			for _, r := range nf.Sets[split+"/known"] {
				all++
				if r.Pred == r.Class {
					right++
				}
			}
		}
		ns.KnownAccuracy = float64(right) / float64(all)
		for name, v := range scores {
			ns.Scores[name] = evaluate(v, nf.AcceptRate)
		}
		for name, d := range cost {
			ns.GoCost[name] = d.String()
		}
		rep.Seeds = append(rep.Seeds, ns)
		if rep.Passes == nil {
			if rep.Passes, err = passCosts(l); err != nil {
				return err
			}
		}
		rep.Run.finish()
		if err := writeNear(o.out, rep); err != nil {
			return err
		}
	}
	return nil
}

// passCosts times one image's passes (p50 of 200, batch 1).
func passCosts(l layout) (map[string]string, error) {
	c, err := infer.Open(context.Background(), l.model, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	s, err := newStagedSession(l.model, c.Manifest())
	if err != nil {
		return nil, err
	}
	defer s.close()
	img := image.NewGray(image.Rect(0, 0, 28, 28))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	in, err := c.Prepare(img)
	if err != nil {
		return nil, err
	}
	x := s.pre.Image(img)
	x4 := slices.Concat(x, x, x, x)
	p50 := func(f func() error) (string, error) {
		var d []time.Duration
		for range 200 {
			start := time.Now()
			if err := f(); err != nil {
				return "", err
			}
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d[len(d)/2].String(), nil
	}
	out := map[string]string{}
	for name, f := range map[string]func() error{
		"model.onnx (classify, today's scores)": func() error {
			_, err := c.ClassifyInputs(context.Background(), []infer.Input{in})
			return err
		},
		"backbone with pooled stages (1 pass)": func() error { _, _, _, err := s.run(x, 1); return err },
		"backbone with pooled stages, 4 turns (4 passes, one batch)": func() error {
			_, _, _, err := s.run(x4, 4)
			return err
		},
	} {
		if out[name], err = p50(f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nearSummary is a score's mean and std over seeds of each measurement.
type nearSummary struct {
	name                  string
	val, test, fpr        map[string][2]float64
	accLo, accHi, farRej  float64
	criterion, valNearFar float64
}

func seedMeanStd(v []float64) [2]float64 {
	var m, s float64
	for _, x := range v {
		m += x / float64(len(v))
	}
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	if len(v) > 1 {
		s /= float64(len(v) - 1)
	}
	return [2]float64{m, math.Sqrt(s)}
}

func summarise(rep nearReport) []nearSummary {
	var out []nearSummary
	for name := range rep.Seeds[0].Scores {
		s := nearSummary{name: name, val: map[string][2]float64{}, test: map[string][2]float64{}, fpr: map[string][2]float64{},
			accLo: math.Inf(1), accHi: math.Inf(-1)}
		var far []float64
		for _, kind := range nearKinds {
			var v, t, f []float64
			for _, seed := range rep.Seeds {
				e := seed.Scores[name]
				v = append(v, e.Validation[kind].AUROC)
				t = append(t, e.Test[kind].AUROC)
				f = append(f, e.Test[kind].FPR95)
			}
			s.val[kind], s.test[kind], s.fpr[kind] = seedMeanStd(v), seedMeanStd(t), seedMeanStd(f)
		}
		for _, seed := range rep.Seeds {
			e := seed.Scores[name]
			s.accLo, s.accHi = min(s.accLo, e.Accepted), max(s.accHi, e.Accepted)
			far = append(far, e.FarRejected)
		}
		s.farRej = seedMeanStd(far)[0]
		s.criterion = (s.val[kindNear][0] + s.val[kindShifted][0] + s.val[kindFar][0]) / 3
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].criterion > out[j].criterion })
	return out
}

func writeNear(dir string, rep nearReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := durable.WriteJSON(filepath.Join(dir, "near.json"), rep); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, "near.md"), []byte(nearMarkdown(rep)))
}

// renderNear rewrites near.md from near.json.
func renderNear(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "near.json"))
	if err != nil {
		return err
	}
	var rep nearReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, "near.md"), []byte(nearMarkdown(rep)))
}

func pm(v [2]float64) string { return fmt.Sprintf("%.3f ± %.3f", v[0], v[1]) }

func nearMarkdown(rep nearReport) string {
	var b strings.Builder
	sums := summarise(rep)
	byName := map[string]nearSummary{}
	for _, s := range sums {
		byName[s.name] = s
	}
	fmt.Fprintf(&b, "# Near unknowns: candidate scores (generated by bench/openset --near)\n\n")
	fmt.Fprintf(&b, "- command: `%s`\n- %s, load average %s at start, %s at end\n", rep.Command, rep.Run.Machine, rep.Run.LoadStart, rep.Run.LoadEnd)
	fmt.Fprintf(&b, "- seeds:")
	for _, s := range rep.Seeds {
		fmt.Fprintf(&b, " %d (near validation %s, near test %s, known accuracy %.3f, asked rate %.2f);", s.Seed,
			strings.Join(s.NearVal, ", "), strings.Join(s.NearTest, ", "), s.KnownAccuracy, s.AcceptRate)
	}
	fmt.Fprintf(&b, "\n- images (seed %d): %v\n", rep.Seeds[0].Seed, rep.Seeds[0].Images)
	fmt.Fprintf(&b, "- p50 batch-1 passes (seed %d's model): %v\n", rep.Seeds[0].Seed, rep.Passes)
	fmt.Fprintf(&b, "- Go-side time per image by family (seed %d): %v\n\n", rep.Seeds[0].Seed, rep.Seeds[0].GoCost)
	fmt.Fprintf(&b, "Choice criterion: mean over seeds of the validation AUROC on near (the validation class), shifted and far, averaged.\n\n")
	header := "| score | val near | val shifted | val far | criterion | test near | test shifted | test far-photos | test far-synthetic | test far | FPR95 near | FPR95 far | known accepted | far rejected |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
	row := func(s nearSummary) string {
		return fmt.Sprintf("| %s | %s | %s | %s | %.3f | %s | %s | %s | %s | %s | %s | %s | %.3f to %.3f | %.3f |\n", s.name,
			pm(s.val[kindNear]), pm(s.val[kindShifted]), pm(s.val[kindFar]), s.criterion,
			pm(s.test[kindNear]), pm(s.test[kindShifted]), pm(s.test[kindFarPhotos]), pm(s.test[kindFarSynthetic]), pm(s.test[kindFar]),
			pm(s.fpr[kindNear]), pm(s.fpr[kindFar]), s.accLo, s.accHi, s.farRej)
	}
	fmt.Fprintf(&b, "## Single scores (sorted by the criterion)\n\n%s", header)
	for _, s := range sums {
		if !strings.HasPrefix(s.name, "sum(") {
			b.WriteString(row(s))
		}
	}
	fmt.Fprintf(&b, "\n## Sums of standardised scores, best 25 by the criterion\n\n%s", header)
	n := 0
	for _, s := range sums {
		if strings.HasPrefix(s.name, "sum(") && n < 25 {
			b.WriteString(row(s))
			n++
		}
	}
	fmt.Fprintf(&b, "\n## Best validation near with validation far >= 0.95 (best 15)\n\n%s", header)
	var con []nearSummary
	for _, s := range sums {
		if s.val[kindFar][0] >= 0.95 {
			con = append(con, s)
		}
	}
	sort.SliceStable(con, func(i, j int) bool { return con[i].val[kindNear][0] > con[j].val[kindNear][0] })
	for _, s := range con[:min(15, len(con))] {
		b.WriteString(row(s))
	}
	fmt.Fprintf(&b, "\n## Per seed: validation / test near AUROC of every single score\n\n| score |")
	for _, s := range rep.Seeds {
		fmt.Fprintf(&b, " seed %d |", s.Seed)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rep.Seeds)) + "\n")
	for _, s := range sums {
		if strings.HasPrefix(s.name, "sum(") {
			continue
		}
		fmt.Fprintf(&b, "| %s |", s.name)
		for _, seed := range rep.Seeds {
			e := seed.Scores[s.name]
			fmt.Fprintf(&b, " %.3f / %.3f |", e.Validation[kindNear].AUROC, e.Test[kindNear].AUROC)
		}
		b.WriteString("\n")
	}
	return b.String()
}
