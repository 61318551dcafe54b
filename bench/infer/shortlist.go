package main

import (
	"context"
	"fmt"
	"image"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bicyc/bicyc/bench/compare"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/infer"
)

// wholeImages is how many images the image-to-answer comparison of
// measureShortlist classifies on each side.
const wholeImages = 2000

// shortlistRow is what --shortlist measured on one model: the classifier
// stage alone at batch 1 (exact classifier.onnx against classgraph.Shortlist
// of the same tables, same features, same process) and the shortlist's
// agreement with the exact answer over every test image.
type shortlistRow struct {
	classes, n         int
	exactP50, shortP50 float64 // wall microseconds per call
	exactCPU, shortCPU float64 // CPU microseconds per call
	// image to top-5 at batch 1, wall microseconds: Classify against
	// Embed then the shortlist
	exactWholeP50, shortWholeP50 float64
	top1, top5, images           int
	load                         string
}

// measureShortlist embeds imgs with the model in dir, scores each image
// alone with the exact classifier and with a shortlist of n, and compares.
func measureShortlist(o options, dir string, imgs []image.Image, n int) (shortlistRow, error) {
	row := shortlistRow{n: n}
	var err error
	if row.load, err = compare.LoadAverage(); err != nil {
		return row, err
	}
	tables, short, exact, err := shortlistGraphs(dir, n)
	if err != nil {
		return row, err
	}
	row.classes = tables.K
	ctx := context.Background()
	c, err := infer.Open(ctx, dir, infer.WithProvider(infer.ProviderCPU), infer.WithThreads(o.threads),
		infer.WithLibraryPath(o.ortLib), infer.WithLog(io.Discard))
	if err != nil {
		return row, err
	}
	defer c.Close()
	feats, err := c.Embed(ctx, imgs)
	if err != nil {
		return row, err
	}
	ss, err := newShortlistSessions(o, dir, exact, short, tables.K, tables.S, n)
	if err != nil {
		return row, err
	}
	defer ss.destroy()
	if err := ss.compareStages(feats, &row); err != nil {
		return row, err
	}
	fmt.Fprintf(os.Stderr, "%d classes, shortlist of %d: %d images\n", tables.K, ss.n, len(feats))
	row.exactWholeP50, row.shortWholeP50, err = ss.compareWhole(ctx, c, imgs[:min(wholeImages, len(imgs))])
	return row, err
}

// shortlistGraphs reads the model in dir and returns its classifier tables, the ONNX graph of a
// shortlist of n built from them (classgraph.Shortlist) and the exact classifier's graph.
func shortlistGraphs(dir string, n int) (tables gauss.ClassifierTables, short, exact []byte, err error) {
	b, err := bundle.Open(dir)
	if err != nil {
		return tables, nil, nil, err
	}
	raw, err := b.ReadFile(bundle.PrototypesFile)
	if err != nil {
		return tables, nil, nil, err
	}
	p, err := bundle.DecodePrototypes(raw)
	if err != nil {
		return tables, nil, nil, err
	}
	clf, err := gauss.NewClassifier(p.Gaussians(), nil, b.Manifest.Classifier.WithAges(bundle.Ages(b.Manifest.Classes)))
	if err != nil {
		return tables, nil, nil, err
	}
	tables = clf.Tables()
	copy(tables.Bias, p.Bias)
	if short, err = classgraph.Shortlist(tables, n); err != nil {
		return tables, nil, nil, err
	}
	exact, err = b.ReadFile(bundle.ClassifierFile)
	return tables, short, exact, err
}

// shortlistSessions are ONNX Runtime sessions of the exact classifier and
// of the shortlist, with their input and output tensors for one image.
type shortlistSessions struct {
	n                  int // the shortlist's length, at most the classes
	exact, short       *ort.DynamicAdvancedSession
	x, scores, sScores *ort.Tensor[float32]
	sClasses           *ort.Tensor[int64]
	opts               *ort.SessionOptions
}

func newShortlistSessions(o options, dir string, exact, short []byte, k, s, n int) (_ *shortlistSessions, err error) {
	ss := &shortlistSessions{n: min(n, k)}
	defer func() {
		if err != nil {
			ss.destroy()
		}
	}()
	if ss.opts, err = ort.NewSessionOptions(); err != nil {
		return nil, err
	}
	if err := ss.opts.SetIntraOpNumThreads(o.threads); err != nil {
		return nil, err
	}
	if err := ss.opts.AddSessionConfigEntry("session.model_external_initializers_file_folder_path", dir); err != nil {
		return nil, err
	}
	ss.exact, err = ort.NewDynamicAdvancedSessionWithONNXData(exact, []string{bundle.TensorFeatures}, []string{bundle.TensorScores}, ss.opts)
	if err != nil {
		return nil, err
	}
	ss.short, err = ort.NewDynamicAdvancedSessionWithONNXData(short, []string{bundle.TensorFeatures},
		[]string{bundle.TensorShortlistScores, bundle.TensorShortlistClasses}, ss.opts)
	if err != nil {
		return nil, err
	}
	ss.x, _ = ort.NewEmptyTensor[float32](ort.NewShape(1, int64(s)))
	ss.scores, _ = ort.NewEmptyTensor[float32](ort.NewShape(1, int64(k)))
	ss.sScores, _ = ort.NewEmptyTensor[float32](ort.NewShape(1, int64(ss.n)))
	ss.sClasses, _ = ort.NewEmptyTensor[int64](ort.NewShape(1, int64(ss.n)))
	return ss, nil
}

// destroy frees what newShortlistSessions made; it accepts a half-made one.
func (ss *shortlistSessions) destroy() {
	for _, t := range []*ort.Tensor[float32]{ss.x, ss.scores, ss.sScores} {
		if t != nil {
			t.Destroy()
		}
	}
	if ss.sClasses != nil {
		ss.sClasses.Destroy()
	}
	for _, s := range []*ort.DynamicAdvancedSession{ss.short, ss.exact} {
		if s != nil {
			s.Destroy()
		}
	}
	if ss.opts != nil {
		ss.opts.Destroy()
	}
}

// compareStages times the classifier stage alone over feats, exact then
// shortlist, and counts the images whose top-1 and top-5 agree.
func (ss *shortlistSessions) compareStages(feats [][]float32, row *shortlistRow) error {
	// The exact pass over every image, then the shortlist pass: a service
	// runs one of the two, and interleaving them let the exact graph's
	// table evict the shortlist's from the cache before every call.
	wants := make([][]int64, len(feats))
	exactWall, exactCPU, err := timeCalls(feats, ss.x, func() error {
		return ss.exact.Run([]ort.Value{ss.x}, []ort.Value{ss.scores})
	}, func(i int) {
		wants[i] = best(ss.scores.GetData(), nil, 5)
	})
	if err != nil {
		return err
	}
	shortWall, shortCPU, err := timeCalls(feats, ss.x, func() error {
		return ss.short.Run([]ort.Value{ss.x}, []ort.Value{ss.sScores, ss.sClasses})
	}, func(i int) {
		got := best(ss.sScores.GetData(), ss.sClasses.GetData(), 5)
		if wants[i][0] == got[0] {
			row.top1++
		}
		if slices.Equal(wants[i], got) {
			row.top5++
		}
	})
	if err != nil {
		return err
	}
	row.images = len(feats)
	row.exactP50, row.shortP50 = compare.Median(exactWall), compare.Median(shortWall)
	row.exactCPU = float64(exactCPU.Microseconds()) / float64(len(feats))
	row.shortCPU = float64(shortCPU.Microseconds()) / float64(len(feats))
	return nil
}

// compareWhole times image to top-5, one image per call: Classify
// (model.onnx, exact) against Embed (backbone.onnx) then the shortlist,
// each side in its own pass, and returns the median microseconds of each.
func (ss *shortlistSessions) compareWhole(ctx context.Context, c *infer.Classifier, imgs []image.Image) (exactP50, shortP50 float64, err error) {
	var exactWhole, shortWhole []float64
	for _, img := range imgs {
		start := time.Now()
		if _, err := c.Classify(ctx, img); err != nil {
			return 0, 0, err
		}
		exactWhole = append(exactWhole, float64(time.Since(start).Microseconds()))
	}
	for i := range imgs {
		start := time.Now()
		f, err := c.Embed(ctx, imgs[i:i+1])
		if err != nil {
			return 0, 0, err
		}
		copy(ss.x.GetData(), f[0])
		if err := ss.short.Run([]ort.Value{ss.x}, []ort.Value{ss.sScores, ss.sClasses}); err != nil {
			return 0, 0, err
		}
		best(ss.sScores.GetData(), ss.sClasses.GetData(), 5)
		shortWhole = append(shortWhole, float64(time.Since(start).Microseconds()))
	}
	return compare.Median(exactWhole), compare.Median(shortWhole), nil
}

// timeCalls copies each feature row i into x, calls run and then check(i),
// and returns each run's wall time in microseconds and the CPU time of the
// runs alone (check, ranking in Go, is not counted).
func timeCalls(feats [][]float32, x *ort.Tensor[float32], run func() error, check func(i int)) ([]float64, time.Duration, error) {
	wall := make([]float64, 0, len(feats))
	var cpu time.Duration
	for i, f := range feats {
		copy(x.GetData(), f)
		cpu0, err := compare.CPUTime()
		if err != nil {
			return nil, 0, err
		}
		start := time.Now()
		if err := run(); err != nil {
			return nil, 0, err
		}
		wall = append(wall, float64(time.Since(start).Microseconds()))
		cpu1, err := compare.CPUTime()
		if err != nil {
			return nil, 0, err
		}
		cpu += cpu1 - cpu0
		check(i)
	}
	return wall, cpu, nil
}

// best returns the classes of the k smallest scores, best first, ties by
// class; classes maps positions to classes (nil: the position).
func best(scores []float32, classes []int64, k int) []int64 {
	idx := make([]int64, len(scores))
	for i := range idx {
		idx[i] = int64(i)
		if classes != nil {
			idx[i] = classes[i]
		}
	}
	pos := make([]int, len(scores))
	for i := range pos {
		pos[i] = i
	}
	sort.SliceStable(pos, func(a, b int) bool {
		sa, sb := scores[pos[a]], scores[pos[b]]
		if sa != sb {
			return sa < sb
		}
		return idx[pos[a]] < idx[pos[b]]
	})
	out := make([]int64, min(k, len(pos)))
	for i := range out {
		out[i] = idx[pos[i]]
	}
	return out
}

func writeShortlist(out io.Writer, rows []shortlistRow) {
	fmt.Fprintf(out, "\n# classifier stage at batch 1: exact classifier.onnx against classgraph.Shortlist (same features, same process)\n\n")
	t := compare.Table{Header: []string{"classes", "shortlist", "exact p50 (us)", "shortlist p50 (us)", "exact CPU per call (us)", "shortlist CPU per call (us)",
		"image to top-5 p50, exact Classify (us)", "image to top-5 p50, Embed + shortlist (us)",
		"top-1 equal", "top-5 equal", "load before"}}
	for _, r := range rows {
		t.Add(fmt.Sprint(r.classes), fmt.Sprint(r.n), fmt.Sprintf("%.0f", r.exactP50), fmt.Sprintf("%.0f", r.shortP50),
			fmt.Sprintf("%.0f", r.exactCPU), fmt.Sprintf("%.0f", r.shortCPU),
			fmt.Sprintf("%.0f", r.exactWholeP50), fmt.Sprintf("%.0f", r.shortWholeP50),
			fmt.Sprintf("%.2f %% (%d/%d)", 100*float64(r.top1)/float64(r.images), r.top1, r.images),
			fmt.Sprintf("%.2f %% (%d/%d)", 100*float64(r.top5)/float64(r.images), r.top5, r.images), r.load)
	}
	t.Write(out)
}
