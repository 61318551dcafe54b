package main

import (
	"context"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"time"

	"github.com/bicyc/bicyc/bench/compare"
	"github.com/bicyc/bicyc/infer"
)

// agreement is what --agreement measured: the model's default answers
// (with its shortlist, if it has one) against its exact ones
// (infer.WithExactScores), every image classified alone.
type agreement struct {
	classes, shortlist, images int
	top1, top5, verdict        int     // images whose top-1, top-5 list, unknown verdict agree
	distance, probability      float64 // largest relative top-1 distance and absolute probability difference where the top-1 agrees
	unknownScore               float64 // largest relative unknown-score difference
	exactP50, defaultP50       float64 // wall microseconds per image
	exactCPU, defaultCPU       float64 // CPU microseconds per image
	load                       [2]string
}

// measureAgreement classifies every image one per call, first all with
// exact scores and then all with the model's default, so that neither
// pass's tables evict the other's between calls.
func measureAgreement(o options, imgs []image.Image) (agreement, error) {
	var a agreement
	var err error
	if a.load[0], err = compare.LoadAverage(); err != nil {
		return a, err
	}
	ctx := context.Background()
	open := func(exact bool) (*infer.Classifier, error) {
		return infer.Open(ctx, o.model, infer.WithProvider(infer.ProviderCPU), infer.WithThreads(o.threads),
			infer.WithLibraryPath(o.ortLib), infer.WithLog(io.Discard), infer.WithExactScores(exact))
	}
	pass := func(exact bool) ([]infer.Result, []float64, time.Duration, int, error) {
		c, err := open(exact)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		defer c.Close()
		a.classes = len(c.Classes())
		results := make([]infer.Result, len(imgs))
		wall := make([]float64, len(imgs))
		cpu0, err := compare.CPUTime()
		if err != nil {
			return nil, nil, 0, 0, err
		}
		for i, img := range imgs {
			start := time.Now()
			if results[i], err = c.Classify(ctx, img); err != nil {
				return nil, nil, 0, 0, err
			}
			wall[i] = float64(time.Since(start).Nanoseconds()) / 1e3
		}
		cpu1, err := compare.CPUTime()
		return results, wall, cpu1 - cpu0, c.ShortlistSize(), err
	}
	fmt.Fprintf(os.Stderr, "agreement: %d images with exact scores\n", len(imgs))
	exact, exactWall, exactCPU, _, err := pass(true)
	if err != nil {
		return a, err
	}
	fmt.Fprintf(os.Stderr, "agreement: %d images with the model's default\n", len(imgs))
	def, defWall, defCPU, n, err := pass(false)
	if err != nil {
		return a, err
	}
	a.shortlist, a.images = n, len(imgs)
	for i := range imgs {
		e, d := exact[i], def[i]
		if e.Predictions[0].ClassID == d.Predictions[0].ClassID {
			a.top1++
			a.distance = max(a.distance, relDiff(float64(e.Predictions[0].Distance), float64(d.Predictions[0].Distance)))
			a.probability = max(a.probability, math.Abs(e.Predictions[0].Probability-d.Predictions[0].Probability))
		}
		same := len(e.Predictions) == len(d.Predictions)
		for j := range e.Predictions {
			same = same && e.Predictions[j].ClassID == d.Predictions[j].ClassID
		}
		if same {
			a.top5++
		}
		if e.Unknown == d.Unknown {
			a.verdict++
		}
		a.unknownScore = max(a.unknownScore, relDiff(e.UnknownScore, d.UnknownScore))
	}
	a.exactP50, a.defaultP50 = compare.Percentile(exactWall, 50), compare.Percentile(defWall, 50)
	a.exactCPU = float64(exactCPU.Microseconds()) / float64(len(imgs))
	a.defaultCPU = float64(defCPU.Microseconds()) / float64(len(imgs))
	a.load[1], err = compare.LoadAverage()
	return a, err
}

// relDiff is |a-b| / max(|a|, |b|), 0 when both are 0.
func relDiff(a, b float64) float64 {
	if m := max(math.Abs(a), math.Abs(b)); m > 0 {
		return math.Abs(a-b) / m
	}
	return 0
}

func writeAgreement(out io.Writer, a agreement) {
	pct := func(n int) float64 { return 100 * float64(n) / float64(a.images) }
	fmt.Fprintf(out, "# default answers against exact scores, one image per call (bench/infer --agreement)\n\n")
	fmt.Fprintf(out, "load average %s at the start, %s at the end\n\n", a.load[0], a.load[1])
	fmt.Fprintf(out, "| classes | shortlist | images | top-1 equal | top-5 list equal | unknown verdict equal | top-1 distance, largest rel. diff | top-1 probability, largest abs. diff | unknown score, largest rel. diff | exact p50 (us) | default p50 (us) | exact CPU/image (us) | default CPU/image (us) |\n")
	fmt.Fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(out, "| %d | %d | %d | %.2f %% | %.2f %% | %.2f %% | %.2g | %.2g | %.2g | %.0f | %.0f | %.0f | %.0f |\n",
		a.classes, a.shortlist, a.images, pct(a.top1), pct(a.top5), pct(a.verdict), a.distance, a.probability, a.unknownScore,
		a.exactP50, a.defaultP50, a.exactCPU, a.defaultCPU)
}
