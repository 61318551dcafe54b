package train

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
)

// TaskReport records what happened in one task: its accuracy row, the last
// epoch's loss terms, and where the time went.
type TaskReport struct {
	Task    int       `json:"task"` // 1-based
	Classes []int     `json:"classes"`
	TAg     []float64 `json:"tag"` // accuracy on the test set of each task so far
	TAw     []float64 `json:"taw"`
	// Losses are the mean unweighted Stage I loss terms of the last epoch.
	Losses map[string]float64 `json:"losses"`
	// AdapterLoss is the last Stage II epoch's mean MSE(A(z_old), z_new).
	AdapterLoss float64 `json:"adapter_loss,omitempty"`
	// Seconds spent in each stage, and Stage I training images per second.
	Stage1Seconds     float64 `json:"stage1_seconds"`
	Stage1ImagesPerS  float64 `json:"stage1_images_per_second"`
	Stage2Seconds     float64 `json:"stage2_seconds"`
	TransportSeconds  float64 `json:"transport_seconds"`
	EvaluationSeconds float64 `json:"evaluation_seconds"`
	// Transport says which map carried the old classes into this task's
	// feature space (adapter.select); nil for task 1 and finetune.
	Transport *TransportChoice `json:"transport,omitempty"`
	// ValTAg is the task-agnostic accuracy on each task's validation
	// images (data.val_per_class); empty when a task has none.
	ValTAg []float64 `json:"val_tag,omitempty"`
	// Drift holds the drift diagnostics when eval.drift is on.
	Drift *Drift `json:"drift,omitempty"`
	// TrainedIn is the directory of the run that trained this task when
	// the run took it from another (Fork); empty when it trained it itself.
	TrainedIn string `json:"trained_in,omitempty"`
}

// learnTask runs Stage I, Stage II and evaluation for task t (0-based) and
// updates the run state.
func (r *Run) learnTask(ctx context.Context, t int) (TaskReport, error) {
	cfg := r.cfg
	classes := r.stream.Tasks[t]
	idx := r.trainIndices(classes)
	rep := TaskReport{Task: t + 1, Classes: classes}
	r.log.printf("task %d/%d: classes %v, %d training images", t+1, len(r.stream.Tasks), classes, len(idx))

	old := r.state.Backbone
	cur := old
	if t > 0 {
		cur = old.Clone()
	}
	s := cfg.Model.FeatureDim
	distil := t > 0 && cfg.Method != "finetune"
	var dist, adapt *models.Mapper
	var err error
	if distil {
		if dist, err = models.NewMapper(cfg.Model.Mapper, s, cfg.Model.HiddenMult, r.rng("distiller", t)); err != nil {
			return rep, err
		}
		if cfg.Method == "bicyc" {
			if adapt, err = models.NewMapper(cfg.Model.Mapper, s, cfg.Model.HiddenMult, r.rng("adapter", t)); err != nil {
				return rep, err
			}
		}
	}

	start := time.Now()
	var prev *models.Backbone
	if distil {
		prev = old
	}
	losses, imgs, err := r.stage1(ctx, t, cur, prev, dist, adapt, idx)
	if err != nil {
		return rep, err
	}
	rep.Losses = losses
	rep.Stage1Seconds = since(start)
	rep.Stage1ImagesPerS = float64(imgs) / rep.Stage1Seconds

	// Stage II: features of this task's training images (test-time
	// preprocessing, with flipped copies when flips are part of training).
	start = time.Now()
	flips := cfg.Data.HorizontalFlip
	zNew, err := features(cur, r.train, idx, r.prep, cfg.Train.EvalBatch, flips)
	if err != nil {
		return rep, err
	}
	protos := make(map[int]gauss.Gaussian, len(r.state.Prototypes)+len(classes))
	for c, p := range r.state.Prototypes {
		protos[c] = p
	}
	if distil {
		pair := featurePairs{old: old, cur: cur, idx: idx, zNew: zNew, rows: len(idx) * (1 + btoi(flips)), flips: flips}
		if adapt, err = r.stage2(t, pair, adapt, protos, &rep); err != nil {
			return rep, err
		}
		rep.Stage2Seconds = since(start) - rep.TransportSeconds
	}
	if err := r.newClassStatistics(classes, idx, zNew, flips, protos); err != nil {
		return rep, err
	}
	if cfg.Method != "finetune" {
		r.state.Adapter = adapt
	}
	r.state.Backbone = cur
	r.state.Prototypes = protos

	start = time.Now()
	ev, err := r.evaluate(cur, t)
	if err != nil {
		return rep, err
	}
	rep.TAg, rep.TAw = ev.TAg, ev.TAw
	val, err := r.evaluateSplit(cur, t, SplitVal)
	switch {
	case err == nil:
		rep.ValTAg = val.TAg
	case !errors.Is(err, ErrEmptySplit):
		return rep, err
	}
	rep.EvaluationSeconds = since(start)
	if cfg.Eval.Drift {
		if rep.Drift, err = r.drift(t, old, cur); err != nil {
			return rep, err
		}
	}
	r.log.printf("task %d done: TAg %s  TAw %s  (stage I %.0fs at %.0f img/s, stage II %.1fs, transport %.1fs, eval %.1fs)",
		t+1, percentRow(ev.TAg), percentRow(ev.TAw), rep.Stage1Seconds, rep.Stage1ImagesPerS, rep.Stage2Seconds, rep.TransportSeconds, rep.EvaluationSeconds)
	return rep, nil
}

// stage1 trains the backbone, a fresh head and (t > 1) D and A on task t's
// images; it returns the last epoch's mean loss terms and the number of
// images processed.
func (r *Run) stage1(ctx context.Context, t int, cur, old *models.Backbone, dist, adapt *models.Mapper, idx []int) (map[string]float64, int, error) {
	cfg := r.cfg
	classes := r.stream.Tasks[t]
	epochs, lr := cfg.Train.Epochs, cfg.Train.LR
	if t == 0 {
		epochs, lr = cfg.Train.EpochsFirst, cfg.Train.LRFirst
	}
	rotation := t == 0 && cfg.Train.Rotation
	batch := cfg.Train.BatchSize
	if rotation && cfg.Train.RotationSplitBatch {
		batch /= 4
	}
	batch = min(batch, len(idx))
	if batch < 2 {
		return nil, 0, fmt.Errorf("task %d has %d training images, need at least 2", t+1, len(idx))
	}
	if more := epochsForSteps(epochs, len(idx)/batch, cfg.Train.MinSteps); more > epochs {
		r.log.printf("task %d: %d images give %d steps per epoch: %d epochs for train.min_steps %d",
			t+1, len(idx), len(idx)/batch, more, cfg.Train.MinSteps)
		epochs = more
	}
	copies := 1
	if rotation {
		copies = 4
	}
	c, h, w := r.train.Channels, r.train.Height, r.train.Width
	head := models.NewLinear(cfg.Model.FeatureDim, len(classes)*copies, true, r.rng("head", t))
	step, err := NewStage1Step(cfg, Stage1Nets{Backbone: cur, Old: old, Head: head, Distiller: dist, Adapter: adapt},
		Stage1Input{Batch: batch, Channels: c, Height: h, Width: w, Rotation: rotation})
	if err != nil {
		return nil, 0, err
	}
	defer step.Close()
	terms := step.Terms()
	warmup := int(cfg.Train.DetachWarmup * float64(epochs))
	local := make(map[int]int, len(classes))
	for i, cl := range classes {
		local[cl] = i
	}
	batcher := data.NewBatcher(r.train, idx, data.BatchOptions{
		BatchSize: batch, Shuffle: true, DropLast: true, Seed: r.seed("batches", t), Augment: r.augment, Preprocess: r.prep,
	})
	x := make([]float32, batch*c*h*w)
	labels := make([]int, batch)
	var last map[string]float64
	images := 0
	for epoch := 0; epoch < epochs; epoch++ {
		step.SetWarmup(epoch < warmup)
		epochLR := LearningRate(lr, cfg.Train.LRDecay, cfg.Train.Milestones, epoch, epochs)
		batcher.Epoch(epoch)
		bar := r.newBar(batcher.NumBatches(), fmt.Sprintf("task %d stage I epoch %d/%d", t+1, epoch+1, epochs))
		sums := make([]float64, len(terms))
		steps := 0
		epochStart := time.Now()
		for {
			if err := ctx.Err(); err != nil {
				bar.Finish()
				return nil, 0, err
			}
			n, ok := batcher.Next(x, labels)
			if !ok {
				break
			}
			for i := range labels[:n] {
				labels[i] = local[labels[i]]
			}
			vals, err := step.Run(x[:n*c*h*w], labels[:n], epochLR)
			if err != nil {
				bar.Finish()
				return nil, 0, fmt.Errorf("stage I epoch %d step %d: %w", epoch+1, steps+1, err)
			}
			for i, v := range vals {
				sums[i] += v
			}
			steps++
			images += n * copies
			bar.Describe(fmt.Sprintf("task %d stage I epoch %d/%d  %s  %.0f img/s", t+1, epoch+1, epochs,
				termString(terms, sums, steps), float64(steps*n*copies)/time.Since(epochStart).Seconds()))
			bar.Add(1)
		}
		bar.Finish()
		last = map[string]float64{}
		for i, name := range terms {
			last[name] = sums[i] / float64(max(steps, 1))
		}
		// Many short epochs (a small task under train.min_steps) log about
		// ten lines, not one per epoch.
		if every := (epochs + 9) / 10; epochs <= 20 || (epoch+1)%every == 0 || epoch+1 == epochs {
			r.log.printf("task %d epoch %d/%d lr %.4g: %s (%.0f img/s)", t+1, epoch+1, epochs, epochLR,
				termString(terms, sums, steps), float64(steps*batch*copies)/time.Since(epochStart).Seconds())
		}
	}
	return last, images, nil
}

// rotate90 writes the CHW image src turned k quarter turns counter-clockwise
// into dst (square images; the same turn as data.Rotate90, on normalised
// floats, since the rotation is applied after the batcher normalised).
func rotate90(src, dst []float32, c, h, w, k int) {
	for ch := 0; ch < c; ch++ {
		s, d := src[ch*h*w:(ch+1)*h*w], dst[ch*h*w:(ch+1)*h*w]
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				var sy, sx int
				switch k % 4 {
				case 0:
					sy, sx = y, x
				case 1:
					sy, sx = x, w-1-y
				case 2:
					sy, sx = h-1-y, w-1-x
				case 3:
					sy, sx = h-1-x, y
				}
				d[y*w+x] = s[sy*w+sx]
			}
		}
	}
}

// newClassStatistics estimates the prototype of every class of the task from
// its rows of zNew (originals first, then flipped copies when flips is set).
func (r *Run) newClassStatistics(classes, idx []int, zNew []float32, flips bool, protos map[int]gauss.Gaussian) error {
	s := r.cfg.Model.FeatureDim
	var estimated []gauss.Gaussian
	for _, c := range classes {
		var rows []float32
		n := 0
		for pass := 0; pass < 1+btoi(flips); pass++ {
			for i, j := range idx {
				if r.train.Labels[j] == c {
					row := pass*len(idx) + i
					rows = append(rows, zNew[row*s:(row+1)*s]...)
					n++
				}
			}
		}
		// The diagonal fallback for a one-image class needs a variance of
		// the features' own scale: this task's classes estimated so far,
		// else the old prototypes, else 1.
		prior := 1.0
		if len(estimated) > 0 {
			prior = gauss.MeanVariance(estimated)
		} else if len(protos) > 0 {
			prior = gauss.MeanVariance(slices.Collect(maps.Values(protos)))
		}
		g, err := classStatistics(rows, n, s, prior)
		if err != nil {
			return fmt.Errorf("statistics of class %d (%d feature rows): %w", c, n, err)
		}
		protos[c] = g
		estimated = append(estimated, g)
		r.state.ClassCounts[c] = n / (1 + btoi(flips))
	}
	return nil
}

func termString(names []string, sums []float64, steps int) string {
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s %.4f", name, sums[i]/float64(max(steps, 1)))
	}
	return b.String()
}

func percentRow(acc []float64) string {
	parts := make([]string, len(acc))
	for i, a := range acc {
		parts[i] = fmt.Sprintf("%.1f", 100*a)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
