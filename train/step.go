package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/optim"
)

// Stage1Nets are the networks of one task's Stage I (docs/method.md, Stage I).
// Backbone, Head, Distiller and Adapter are trained in place; Old is only
// read.
type Stage1Nets struct {
	// Backbone is f_t, the backbone being trained.
	Backbone *models.Backbone
	// Old is the frozen f_{t-1}, run in evaluation mode for z_old; nil
	// without distillation (task 1, method finetune).
	Old *models.Backbone
	// Head maps S features to the task's classes, times 4 with rotation.
	Head *models.Linear
	// Distiller is D (new -> old), needed with Old. Adapter is A
	// (old -> new), needed with Old for method bicyc; adagauss learns its
	// adapter after Stage I.
	Distiller, Adapter *models.Mapper
	// Rehearsal is prototype rehearsal's head and old Gaussians, needed
	// with Old when loss.rehearsal.enabled is set; nil otherwise.
	Rehearsal *Rehearsal
	// Projection is the contrastive projection head of task 1
	// (train.contrastive_weight), trained with NT-Xent at that weight on
	// two views of every image; it needs Stage1Input.Rotation. nil is off.
	Projection *Projection
}

// Stage1Input is the shape of the batches a Stage1Step trains on.
type Stage1Input struct {
	// Batch is the number of images of one step, at least 2 (L_ac needs a
	// covariance).
	Batch int
	// Channels, Height, Width are the image shape (NCHW).
	Channels, Height, Width int
	// Rotation adds each image's 90, 180 and 270 degree turns as their own
	// classes (docs/method.md, Task 1: train.rotation): the graph sees
	// 4*Batch rows and the head needs 4 outputs per class. Needs square
	// images.
	Rotation bool
	// FrozenBatchNorm runs the backbone's BatchNorm layers in evaluation
	// mode: running statistics used and kept, scale and shift still
	// trained (train.freeze_bn_stats on tasks after the first).
	FrozenBatchNorm bool
	// PairSeed seeds the random rows of L_pair (loss.pair_sampling random
	// with more rows than loss.pair_rows); train derives it from the run's
	// seed and the task, so no other random stream changes.
	PairSeed int64
	// OutlierSeed seeds the draws of the outlier images (loss.outlier_exposure)
	// from a stream of their own, so switching them on changes no other random
	// choice of the run.
	OutlierSeed int64
	// ContrastiveSeed seeds the turns each image gets with
	// Stage1Nets.Projection, from a stream of its own.
	ContrastiveSeed int64
}

// Stage1Step is one Stage I training step of a task, with the exact graph
// train runs: a forward and backward pass of buildStage1's graph and one SGD
// update (train.momentum, train.weight_decay, train.clip_norm of the config,
// the backbone at train.backbone_lr_scale times the rate) of every trained
// parameter; frozen backbone stages (models.Backbone.FreezeStages) are not
// trained and keep their BatchNorm in evaluation mode. The loss, its weights and its gradient routing
// are docs/method.md's, switched by cfg.Method and cfg.Loss:
//
//	CE + alpha*L_ac + lambda_bi*(L_n2o + L_o2n) + lambda_cyc*L_cyc + lambda_pair*L_pair   (bicyc)
//	CE + alpha*L_ac + kd_weight*L_n2o                                                      (adagauss)
//	CE + alpha*L_ac                                                  (no old backbone, finetune)
//
// plus lambda*L_pr with loss.rehearsal (Stage1Nets.Rehearsal), and
// loss.outlier_exposure*L_oe with outlier exposure: each step also runs
// outliersPerStep images made from the batch's own images (buildOutliers),
// whose head outputs L_oe trains towards uniform.
//
// (buildStage1 documents which network each term trains). z_old is the old
// backbone's evaluation-mode features of the same rows, computed before
// every step. The step holds the networks of Stage1Nets and updates them in
// place; its graphs own memory released by Close. Not safe for concurrent
// use, nor while another graph runs the same networks.
type Stage1Step struct {
	cfg      config.Config
	nets     stage1Nets
	in       Stage1Input
	classes  int                   // task classes (head outputs / copies)
	graphs   map[bool]*stage1Graph // by detach; the warm-up graph is built on first use
	detach   bool
	old      *extractor // nil without an old backbone
	pairRand *rand.Rand // draws L_pair's random rows
	oeRand   *rand.Rand // draws the outlier images; nil without outlier exposure
	sslRand  *rand.Rand // draws each image's turns with a projection head; nil without
	solver   *optim.SGD
	terms    []string
	imageLen int // floats of one image
}

// NewStage1Step builds the Stage I step of cfg for nets on batches of in.
// It returns an error when the networks or the shape do not fit together:
// head inputs or old features other than the backbone's S, head outputs
// not a multiple of 4 with rotation, rotation of non-square images, a
// missing mapper, or an old backbone with method finetune.
func NewStage1Step(cfg config.Config, nets Stage1Nets, in Stage1Input) (*Stage1Step, error) {
	if nets.Backbone == nil || nets.Head == nil {
		return nil, errors.New("stage I step: backbone and head are required")
	}
	if in.Batch < 2 || in.Channels < 1 || in.Height < 1 || in.Width < 1 {
		return nil, fmt.Errorf("stage I step: batch %d of %dx%dx%d images, want a batch >= 2 of non-empty images", in.Batch, in.Channels, in.Height, in.Width)
	}
	s := nets.Backbone.FeatureDim()
	if nets.Head.In() != s {
		return nil, fmt.Errorf("stage I step: head takes %d features, backbone gives %d", nets.Head.In(), s)
	}
	copies := 1
	if in.Rotation {
		copies = 4
		if in.Height != in.Width {
			return nil, fmt.Errorf("stage I step: rotation needs square images, got %dx%d", in.Height, in.Width)
		}
	}
	if nets.Head.Out()%copies != 0 {
		return nil, fmt.Errorf("stage I step: head has %d outputs, want 4 per class with rotation", nets.Head.Out())
	}
	if nets.Old != nil {
		switch {
		case cfg.Method == config.MethodFinetune:
			return nil, errors.New("stage I step: method finetune has no old backbone")
		case nets.Old.FeatureDim() != s:
			return nil, fmt.Errorf("stage I step: old backbone gives %d features, new one %d", nets.Old.FeatureDim(), s)
		case nets.Distiller == nil:
			return nil, errors.New("stage I step: distillation from the old backbone needs a distiller")
		case cfg.Method != config.MethodAdaGauss && nets.Adapter == nil:
			return nil, fmt.Errorf("stage I step: method %s needs an adapter", cfg.Method)
		}
	}
	if nets.Projection != nil && !in.Rotation {
		return nil, errors.New("stage I step: the contrastive projection head needs rotation (two views at two turns per image)")
	}
	if err := checkRehearsal(cfg, nets, nets.Head.Out()/copies); err != nil {
		return nil, err
	}
	st := &Stage1Step{
		cfg: cfg,
		nets: stage1Nets{backbone: nets.Backbone, head: nets.Head, distiller: nets.Distiller, adapter: nets.Adapter,
			rows: in.Batch * copies, numClasses: nets.Head.Out(), hasOld: nets.Old != nil, frozenBN: in.FrozenBatchNorm,
			rehearsal: nets.Rehearsal, projection: nets.Projection},
		in:       in,
		classes:  nets.Head.Out() / copies,
		graphs:   map[bool]*stage1Graph{},
		solver:   &optim.SGD{Momentum: cfg.Train.Momentum, WeightDecay: cfg.Train.WeightDecay, ClipNorm: cfg.Train.ClipNorm},
		imageLen: in.Channels * in.Height * in.Width,
		pairRand: rand.New(rand.NewPCG(uint64(in.PairSeed), 0)),
	}
	if nets.Projection != nil {
		st.sslRand = rand.New(rand.NewPCG(uint64(in.ContrastiveSeed), 1))
	}
	if cfg.Loss.OutlierExposure > 0 {
		st.nets.outliers = outliersPerStep(in.Batch)
		st.oeRand = rand.New(rand.NewPCG(uint64(in.OutlierSeed), 0))
	}
	st.solver.LRScale = backboneLRScale(nets.Backbone, cfg.Train.BackboneLRScale)
	sg, err := st.graph()
	if err != nil {
		return nil, err
	}
	for _, t := range sg.terms {
		st.terms = append(st.terms, t.name)
	}
	if nets.Old != nil {
		if st.old, err = newExtractor(nets.Old, st.nets.rows, in.Channels, in.Height, in.Width); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

// backboneLRScale gives the backbone's layers before its 1x1 reduction the learning-rate factor scale
// (train.backbone_lr_scale); the reduction, new in a pretrained backbone, trains at the heads' rate. (The
// authors' code puts the reduction's weight, not its bias, in the backbone's group.) Frozen stages are not
// trained at all. nil for scale 1.
func backboneLRScale(b *models.Backbone, scale float64) map[*tensor.Dense]float64 {
	if scale == 1 {
		return nil
	}
	reduce := b.ReduceParams()
	m := map[*tensor.Dense]float64{}
	for _, p := range b.Params() {
		if !slices.Contains(reduce, p) {
			m[p] = scale
		}
	}
	return m
}

// graph returns the graph of the current detach mode, building it on first use.
func (st *Stage1Step) graph() (*stage1Graph, error) {
	if sg := st.graphs[st.detach]; sg != nil {
		return sg, nil
	}
	n := st.nets
	n.detach = st.detach
	sg, err := buildStage1(st.cfg, n, st.in.Channels, st.in.Height, st.in.Width)
	if err != nil {
		return nil, fmt.Errorf("stage I step: %w", err)
	}
	st.graphs[st.detach] = sg
	return sg, nil
}

// Terms returns the names of the loss terms Run reports, in its order: ce,
// then those of ac, ssl, n2o, o2n, cyc, pair, pr and oe that cfg (and a
// projection head) switch on.
func (st *Stage1Step) Terms() []string { return append([]string(nil), st.terms...) }

// SetWarmup switches the detach warm-up on or off for the following steps
// (docs/method.md, Optimisation: the first train.detach_warmup of the epochs): while on, every
// loss term sees the backbone's features through a stop-gradient, so the
// backbone gets no update and only the head, D and A train.
func (st *Stage1Step) SetWarmup(on bool) { st.detach = on }

// Run trains one step on a batch: images are in.Batch NCHW float32 images,
// normalised as training does, and labels their task-local classes in
// [0, classes). It returns the unweighted loss terms of the batch in Terms'
// order, computed before the update, at learning rate lr. A non-finite loss
// term or gradient norm is an error naming it, and the weights are then not
// updated. Run keeps neither slice.
//
// With rotation, image i turned q quarter turns counter-clockwise is row
// 4i+q with class 4*labels[i]+q (the authors' layout). With a projection
// head, images holds 2*in.Batch images, the batch's first views and then
// its second views (data.Batcher.SecondView), and image i's rows 4i..4i+3
// are its views a, b at turn q and a, b at turn q+2 (contrastiveRows).
func (st *Stage1Step) Run(images []float32, labels []int, lr float64) ([]float64, error) {
	if st.graphs == nil {
		panic("train: Stage1Step.Run after Close")
	}
	views := 1
	if st.sslRand != nil {
		views = 2
	}
	if len(images) != views*st.in.Batch*st.imageLen || len(labels) != st.in.Batch {
		return nil, fmt.Errorf("stage I step: %d image values and %d labels, want %d images of %dx%dx%d (%d views each) and their labels",
			len(images), len(labels), st.in.Batch, st.in.Channels, st.in.Height, st.in.Width, views)
	}
	second := images[st.in.Batch*st.imageLen:]
	images = images[:st.in.Batch*st.imageLen]
	if !(lr >= 0) || math.IsInf(lr, 0) {
		return nil, fmt.Errorf("stage I step: learning rate %v", lr)
	}
	sg, err := st.graph()
	if err != nil {
		return nil, err
	}
	image := sg.image.Data().([]float32)
	onehot := sg.onehot.Data().([]float32)
	clear(onehot)
	k, size := st.nets.numClasses, st.imageLen
	for i, y := range labels {
		if y < 0 || y >= st.classes {
			return nil, fmt.Errorf("stage I step: label %d of image %d is not a task class in [0,%d)", y, i, st.classes)
		}
		if !st.in.Rotation {
			onehot[i*k+y] = 1
			continue
		}
		if st.sslRand != nil {
			var turns [4]int
			contrastiveRows(st.sslRand, images[i*size:(i+1)*size], second[i*size:(i+1)*size], image[4*i*size:4*(i+1)*size],
				st.in.Channels, st.in.Height, st.in.Width, &turns)
			for j, q := range turns {
				onehot[(4*i+j)*k+4*y+q] = 1
			}
			continue
		}
		for q := 0; q < 4; q++ {
			r := 4*i + q
			rotate90(images[i*size:(i+1)*size], image[r*size:(r+1)*size], st.in.Channels, st.in.Height, st.in.Width, q)
			onehot[r*k+4*y+q] = 1
		}
	}
	if !st.in.Rotation {
		copy(image, images)
	}
	if st.oeRand != nil {
		buildOutliers(st.oeRand, images, labels, st.in.Channels, st.in.Height, st.in.Width, image[st.nets.rows*size:])
	}
	if st.nets.rehearsal != nil {
		if err := fillRehearsal(st.nets.rehearsal, sg, labels, st.nets.rows/st.in.Batch); err != nil {
			return nil, err
		}
	}
	if st.old != nil {
		if err := st.old.run(image, st.nets.rows, sg.zOld.Data().([]float32)); err != nil {
			return nil, fmt.Errorf("old backbone: %w", err)
		}
	}
	if sg.pairRows != nil {
		sg.pairRows.draw(st.pairRand)
	}
	st.solver.LR = lr
	return sg.step(st.solver)
}

// Close releases the step's graphs; the networks stay usable. Close is
// idempotent.
func (st *Stage1Step) Close() {
	for _, sg := range st.graphs {
		sg.close()
	}
	st.graphs = nil
	if st.old != nil {
		st.old.close()
		st.old = nil
	}
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
