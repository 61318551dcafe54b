package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/train"
)

// seedResult is everything measured for one seed.
type seedResult struct {
	Seed    int   `json:"seed"`
	Known   []int `json:"known_classes"`
	Unknown []int `json:"unknown_classes"`
	// Detection of the unknown classes' test images among the known ones'.
	Calibrated detection `json:"calibrated"`
	Baseline   detection `json:"nearest_distance"`
	// AcceptedKnown and RejectedUnknown are the shares of known test images
	// the calibrated threshold accepts (asked: AcceptRate) and of unknown
	// ones it answers unknown.
	AcceptRate      float64 `json:"accept_rate"`
	AcceptedKnown   float64 `json:"accepted_known"`
	RejectedUnknown float64 `json:"rejected_unknown"`
	// OldAccuracy is the trained model's accuracy on the known test images.
	OldAccuracy float64    `json:"old_accuracy"`
	Added       []addition `json:"added"`
	// Budget is what the seed's run trained on (runBudget); nil in a
	// results.json written before it was recorded.
	Budget *budget `json:"budget,omitempty"`
	// Kinds measures every unknown score on every kind of unknown image
	// (--kinds); nil when not measured.
	Kinds *scoreKinds `json:"unknown_kinds,omitempty"`
}

// detection scores an unknown score: unknown test images are positives.
type detection struct {
	AUROC float64 `json:"auroc"`
	FPR95 float64 `json:"fpr_at_95_tpr"`
}

// addition is the accuracy over all ten classes after adding the unknown
// classes from N images each, by add-classes and by learn.
type addition struct {
	N     int      `json:"images_per_class"`
	Add   accuracy `json:"add_classes"`
	Learn accuracy `json:"learn,omitempty"`
}

type accuracy struct {
	New float64 `json:"new_classes"`
	Old float64 `json:"old_classes"`
}

// answer is one test image's class folder and result.
type answer struct {
	class string
	res   infer.Result
}

// measureSeed trains, exports and measures one seed.
func measureSeed(ctx context.Context, o options, base config.Config, s seedData, log io.Writer) (seedResult, error) {
	known, unknown := heldOut(s.seed, o.unknown)
	res := seedResult{Seed: s.seed, Known: known, Unknown: unknown}
	cfg := seedConfig(base, s.seed, filepath.Join(s.dir, "data"), len(known))
	l := seedLayout(s.dir)
	reused := false
	if o.reuse {
		_, err := os.Stat(filepath.Join(l.run, "config.yaml"))
		reused = err == nil
	}
	if reused {
		fmt.Fprintf(log, "seed %d: reusing the run in %s (classes %v, %v held out)\n", s.seed, l.run, known, unknown)
		// Derived from the run: exported and extended again.
		for _, dir := range append([]string{l.model}, addedDirs(l, o.adds)...) {
			if err := os.RemoveAll(dir); err != nil {
				return res, err
			}
		}
	} else {
		if _, err := writeSeedData(s, known, unknown, cfg.Data.TrainPerClass, cfg.Data.TestPerClass, o.adds); err != nil {
			return res, err
		}
		fmt.Fprintf(log, "seed %d: training classes %v, %v held out\n", s.seed, known, unknown)
		if err := newRun(ctx, cfg, l.run, log); err != nil {
			return res, err
		}
	}
	bud, err := runBudget(l.run, filepath.Join(l.data, "train"), filepath.Join(l.data, "test"))
	if err != nil {
		return res, err
	}
	res.Budget = &bud
	if err := train.Export(l.run, l.model, 0); err != nil {
		return res, err
	}
	if err := res.detect(l); err != nil {
		return res, err
	}
	if o.kinds {
		fmt.Fprintf(log, "seed %d: unknown kinds\n", s.seed)
		k, err := measureKinds(l, s.seed, res.AcceptRate)
		if err != nil {
			return res, fmt.Errorf("unknown kinds: %w", err)
		}
		res.Kinds = &k
	}
	for _, n := range o.adds {
		a, err := addClasses(ctx, o, l, n, log)
		if err != nil {
			return res, fmt.Errorf("%d images per class: %w", n, err)
		}
		res.Added = append(res.Added, a)
	}
	return res, nil
}

// addedDirs are the folders add-classes and learn write for adds.
func addedDirs(l layout, adds []int) []string {
	var out []string
	for _, n := range adds {
		out = append(out, l.added(n), l.learnRun(n), l.learnt(n))
	}
	return out
}

// detect fills the detection measurements from the exported model.
func (r *seedResult) detect(l layout) error {
	c, err := infer.Open(context.Background(), l.model, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil))
	if err != nil {
		return err
	}
	defer c.Close()
	if _, r.AcceptRate = c.UnknownThreshold(); r.AcceptRate == 0 {
		return fmt.Errorf("%s has no calibration: does the configuration have a validation split (data.val_per_class)?", l.model)
	}
	knownAns, err := classifyFolder(c, filepath.Join(l.data, "test"))
	if err != nil {
		return err
	}
	unknownAns, err := classifyFolder(c, l.unknownTest)
	if err != nil {
		return err
	}
	calibrated := func(a answer) float64 { return a.res.UnknownScore }
	nearest := func(a answer) float64 { return float64(a.res.Predictions[0].Distance) }
	r.Calibrated = score(knownAns, unknownAns, calibrated)
	r.Baseline = score(knownAns, unknownAns, nearest)
	r.AcceptedKnown = share(knownAns, func(a answer) bool { return !a.res.Unknown })
	r.RejectedUnknown = share(unknownAns, func(a answer) bool { return a.res.Unknown })
	r.OldAccuracy = share(knownAns, correct)
	return nil
}

func correct(a answer) bool { return a.res.Predictions[0].Name == a.class }

func share(as []answer, ok func(answer) bool) float64 {
	n := 0
	for _, a := range as {
		if ok(a) {
			n++
		}
	}
	return float64(n) / float64(len(as))
}

// score computes AUROC (ties count half) and the FPR at 95 % TPR, with
// known images accepted when their score is at most the 95th percentile of
// the known scores.
func score(known, unknown []answer, f func(answer) float64) detection {
	k := make([]float64, len(known))
	for i, a := range known {
		k[i] = f(a)
	}
	slices.Sort(k)
	var auc float64
	accepted := 0
	cut := k[min(len(k)-1, int(0.95*float64(len(k))))]
	for _, a := range unknown {
		u := f(a)
		below, _ := slices.BinarySearch(k, u)
		upto := below
		for upto < len(k) && k[upto] == u {
			upto++
		}
		auc += (float64(below) + 0.5*float64(upto-below)) / float64(len(k))
		if u <= cut {
			accepted++
		}
	}
	return detection{AUROC: auc / float64(len(unknown)), FPR95: float64(accepted) / float64(len(unknown))}
}

// classifyFolder classifies every image of a folder of class folders.
func classifyFolder(c *infer.Classifier, root string) ([]answer, error) {
	classes, _, err := author.ReadClassFolders(root)
	if err != nil {
		return nil, err
	}
	var out []answer
	for _, class := range classes {
		for start := 0; start < len(class.Files); start += 256 {
			files := class.Files[start:min(start+256, len(class.Files))]
			imgs := make([]image.Image, len(files))
			for i, f := range files {
				raw, err := os.ReadFile(f)
				if err != nil {
					return nil, err
				}
				if imgs[i], _, err = imaging.DecodeImage(bytes.NewReader(raw), infer.DefaultMaxPixels); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
			}
			rs, err := c.ClassifyBatch(context.Background(), imgs)
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				out = append(out, answer{class: class.Name, res: r})
			}
		}
	}
	return out, nil
}

// addClasses adds the unknown classes from n images each, by add-classes
// and (with --learn) by learn on a copy of the run, and scores both.
func addClasses(ctx context.Context, o options, l layout, n int, log io.Writer) (addition, error) {
	a := addition{N: n}
	classes, _, err := author.ReadClassFolders(l.add(n))
	if err != nil {
		return a, err
	}
	if _, err := author.AddClasses(context.Background(), l.model, l.added(n), classes, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil)); err != nil {
		return a, err
	}
	if a.Add, err = accuracyOf(l, l.added(n)); err != nil || !o.learn {
		return a, err
	}
	if err := os.CopyFS(l.learnRun(n), os.DirFS(l.run)); err != nil {
		return a, err
	}
	r, err := train.Resume(l.learnRun(n), train.Options{Log: log})
	if err != nil {
		return a, err
	}
	defer r.Close()
	if err := r.Learn(ctx, l.add(n), l.unknownTest, train.LearnOptions{}); err != nil {
		return a, err
	}
	if err := train.Export(l.learnRun(n), l.learnt(n), 0); err != nil {
		return a, err
	}
	a.Learn, err = accuracyOf(l, l.learnt(n))
	return a, err
}

// accuracyOf scores a ten-class model on the old and the new test images.
func accuracyOf(l layout, model string) (accuracy, error) {
	c, err := infer.Open(context.Background(), model, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil))
	if err != nil {
		return accuracy{}, err
	}
	defer c.Close()
	old, err := classifyFolder(c, filepath.Join(l.data, "test"))
	if err != nil {
		return accuracy{}, err
	}
	added, err := classifyFolder(c, l.unknownTest)
	if err != nil {
		return accuracy{}, err
	}
	return accuracy{New: share(added, correct), Old: share(old, correct)}, nil
}
