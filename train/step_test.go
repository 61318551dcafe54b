package train_test

import (
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/train"
)

// One Stage I step of a second task, as train runs it: the new backbone
// starts as a copy of the old one, and the step trains it with a fresh
// head, D and A on 32 Fashion-MNIST images of the task's classes 2 and 3
// (task-local labels 0 and 1).
func ExampleStage1Step() {
	ds, _, err := data.LoadFashionMNIST("")
	if err != nil {
		log.Fatal(err)
	}
	const batch, s = 32, 64
	rng := rand.New(rand.NewPCG(1, 2))
	old, err := models.NewBackbone(arch.ConvNet, 1, s, rng)
	if err != nil {
		log.Fatal(err)
	}
	d, err := models.NewMapper(arch.MLP, s, models.DefaultHiddenMult, rng)
	if err != nil {
		log.Fatal(err)
	}
	a, err := models.NewMapper(arch.MLP, s, models.DefaultHiddenMult, rng)
	if err != nil {
		log.Fatal(err)
	}
	cfg := config.Default()
	nets := train.Stage1Nets{Backbone: old.Clone(), Old: old, Head: models.NewLinear(s, 2, true, rng), Distiller: d, Adapter: a}
	step, err := train.NewStage1Step(cfg, nets, train.Stage1Input{Batch: batch, Channels: 1, Height: 28, Width: 28})
	if err != nil {
		log.Fatal(err)
	}
	defer step.Close()

	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	p := imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: mean, Std: std}
	images := make([]float32, batch*28*28)
	labels := make([]int, batch)
	for i, j := range ds.Subset([]int{2, 3})[:batch] {
		p.Normalize(ds.Image(j), images[i*28*28:(i+1)*28*28])
		labels[i] = ds.Labels[j] - 2
	}
	var first, last []float64
	for i := range 10 {
		if last, err = step.Run(images, labels, cfg.Train.LR); err != nil {
			log.Fatal(err)
		}
		if i == 0 {
			first = last
		}
	}
	fmt.Println(step.Terms())
	fmt.Println("ce fell:", last[0] < first[0])
	// Output:
	// [ce ac n2o o2n cyc pair]
	// ce fell: true
}

// smallNets are the networks of a task-2 step on 8x8 images with S = 8.
func smallNets(t *testing.T, headOut int) train.Stage1Nets {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	old, err := models.NewBackbone(arch.ConvNet, 1, 8, rng)
	if err != nil {
		t.Fatal(err)
	}
	d, err := models.NewMapper(arch.MLP, 8, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	a, err := models.NewMapper(arch.MLP, 8, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	return train.Stage1Nets{Backbone: old.Clone(), Old: old, Head: models.NewLinear(8, headOut, true, rng), Distiller: d, Adapter: a}
}

// smallBatch returns n standard normal 1x8x8 images and labels i mod classes.
func smallBatch(n, classes int) ([]float32, []int) {
	rng := rand.New(rand.NewPCG(3, 4))
	images := make([]float32, n*64)
	for i := range images {
		images[i] = float32(rng.NormFloat64())
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = i % classes
	}
	return images, labels
}

// weights copies the values of ps.
func weights(ps []*tensor.Dense) [][]float32 {
	out := make([][]float32, len(ps))
	for i, p := range ps {
		out[i] = slices.Clone(p.Data().([]float32))
	}
	return out
}

func changed(before [][]float32, ps []*tensor.Dense) bool {
	for i, p := range ps {
		if !slices.Equal(before[i], p.Data().([]float32)) {
			return true
		}
	}
	return false
}

// TestStage1StepWarmup checks what one step trains: during the detach
// warm-up the head, D and A but not the backbone; after it the backbone
// too; the old backbone never.
func TestStage1StepWarmup(t *testing.T) {
	nets := smallNets(t, 2)
	step, err := train.NewStage1Step(config.Default(), nets, train.Stage1Input{Batch: 16, Channels: 1, Height: 8, Width: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	images, labels := smallBatch(16, 2)
	old, backbone := weights(nets.Old.Params()), weights(nets.Backbone.Params())
	head, d, a := weights(nets.Head.Params()), weights(nets.Distiller.Params()), weights(nets.Adapter.Params())

	step.SetWarmup(true)
	losses, err := step.Run(images, labels, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if len(losses) != len(step.Terms()) {
		t.Fatalf("%d losses for terms %v", len(losses), step.Terms())
	}
	if changed(backbone, nets.Backbone.Params()) {
		t.Error("the warm-up step changed the backbone")
	}
	for name, c := range map[string]bool{"head": changed(head, nets.Head.Params()),
		"distiller": changed(d, nets.Distiller.Params()), "adapter": changed(a, nets.Adapter.Params())} {
		if !c {
			t.Errorf("the warm-up step did not train the %s", name)
		}
	}

	step.SetWarmup(false)
	if _, err := step.Run(images, labels, 0.01); err != nil {
		t.Fatal(err)
	}
	if !changed(backbone, nets.Backbone.Params()) {
		t.Error("the step after the warm-up did not train the backbone")
	}
	if changed(old, nets.Old.Params()) {
		t.Error("a step changed the old backbone")
	}
}

// TestStage1StepRotationLabels checks the rotation rows' classes: with a
// zero head weight the logits of every row are the bias b, so with every
// label 0 the rows' classes 4*0+q, q = 0..3, give
//
//	CE = -(1/4) sum_q log softmax(b)[q]
func TestStage1StepRotationLabels(t *testing.T) {
	nets := smallNets(t, 8)
	nets.Old, nets.Distiller, nets.Adapter = nil, nil, nil
	w, b := nets.Head.Params()[0].Data().([]float32), nets.Head.Params()[1].Data().([]float32)
	clear(w)
	var norm float64
	for j := range b {
		b[j] = float32(j) / 4
		norm += math.Exp(float64(b[j]))
	}
	var want float64
	for q := range 4 {
		want -= (float64(b[q]) - math.Log(norm)) / 4
	}
	cfg := config.Default()
	cfg.Loss.AntiCollapse = false
	step, err := train.NewStage1Step(cfg, nets, train.Stage1Input{Batch: 4, Channels: 1, Height: 8, Width: 8, Rotation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	images, _ := smallBatch(4, 2)
	losses, err := step.Run(images, make([]int, 4), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(step.Terms(), []string{"ce"}) {
		t.Fatalf("terms %v, want [ce]", step.Terms())
	}
	if math.Abs(losses[0]-want) > 1e-5 {
		t.Errorf("ce %.7f, want %.7f", losses[0], want)
	}
}

// TestStage1StepBadInput checks that networks, shapes and batches that do
// not fit are errors naming the problem.
func TestStage1StepBadInput(t *testing.T) {
	in := train.Stage1Input{Batch: 4, Channels: 1, Height: 8, Width: 8}
	finetune := config.Default()
	finetune.Method = config.MethodFinetune
	for i, c := range []struct {
		cfg  config.Config
		nets func(train.Stage1Nets) train.Stage1Nets
		in   func(train.Stage1Input) train.Stage1Input
		want string
	}{
		{cfg: finetune, want: "finetune has no old backbone"},
		{nets: func(n train.Stage1Nets) train.Stage1Nets { n.Adapter = nil; return n }, want: "needs an adapter"},
		{nets: func(n train.Stage1Nets) train.Stage1Nets { n.Distiller = nil; return n }, want: "needs a distiller"},
		{nets: func(n train.Stage1Nets) train.Stage1Nets {
			n.Head = models.NewLinear(4, 2, true, rand.New(rand.NewPCG(5, 6)))
			return n
		}, want: "head takes 4 features"},
		{in: func(in train.Stage1Input) train.Stage1Input { in.Rotation = true; return in }, want: "4 per class"},
		{in: func(in train.Stage1Input) train.Stage1Input { in.Rotation, in.Width = true, 6; return in }, want: "square"},
		{in: func(in train.Stage1Input) train.Stage1Input { in.Batch = 1; return in }, want: "batch >= 2"},
	} {
		cfg := config.Default()
		if c.cfg.Method != "" {
			cfg = c.cfg
		}
		nets, shape := smallNets(t, 2), in
		if c.nets != nil {
			nets = c.nets(nets)
		}
		if c.in != nil {
			shape = c.in(shape)
		}
		_, err := train.NewStage1Step(cfg, nets, shape)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, err, c.want)
		}
	}

	step, err := train.NewStage1Step(config.Default(), smallNets(t, 2), in)
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	images, labels := smallBatch(4, 2)
	nan := slices.Clone(images)
	nan[5] = float32(math.NaN())
	for i, c := range []struct {
		images []float32
		labels []int
		want   string
	}{
		{images[:64], labels, "64 image values and 4 labels"},
		{images, labels[:3], "256 image values and 3 labels"},
		{images, []int{0, 1, 2, 0}, "label 2 of image 2"},
		{images, []int{0, -1, 0, 0}, "label -1 of image 1"},
		{nan, labels, "NaN"},
	} {
		_, err := step.Run(c.images, c.labels, 0.01)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run case %d: error %v, want one containing %q", i, err, c.want)
		}
	}
}

// TestStage1StepOutlierExposure checks L_oe and what it trains. With a zero
// head weight every row's logits are the bias b, so with K = 2 outputs
//
//	oe = -(1/2) sum_k log softmax(b)[k]
//
// and, since the real rows' logits do not depend on the outlier rows, the
// only difference one step with loss.outlier_exposure = w makes to the bias
// is L_oe's gradient, -lr*w*(softmax(b) - 1/K): towards equal outputs.
func TestStage1StepOutlierExposure(t *testing.T) {
	const lr, weight = 0.5, 0.5
	b0 := []float32{1, -0.5}
	var norm float64
	for _, v := range b0 {
		norm += math.Exp(float64(v))
	}
	var wantOE float64
	p := make([]float64, len(b0))
	for k, v := range b0 {
		wantOE -= (float64(v) - math.Log(norm)) / float64(len(b0))
		p[k] = math.Exp(float64(v)) / norm
	}
	bias := map[float64][]float32{}
	for _, w := range []float64{0, weight} {
		nets := smallNets(t, 2)
		nets.Old, nets.Distiller, nets.Adapter = nil, nil, nil
		clear(nets.Head.Params()[0].Data().([]float32))
		b := nets.Head.Params()[1].Data().([]float32)
		copy(b, b0)
		cfg := config.Default()
		cfg.Loss.AntiCollapse = false
		cfg.Train.ClipNorm, cfg.Train.WeightDecay = 0, 0
		cfg.Loss.OutlierExposure = w
		step, err := train.NewStage1Step(cfg, nets, train.Stage1Input{Batch: 8, Channels: 1, Height: 8, Width: 8, OutlierSeed: 7})
		if err != nil {
			t.Fatal(err)
		}
		images, labels := smallBatch(8, 2)
		losses, err := step.Run(images, labels, lr)
		step.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"ce"}
		if w > 0 {
			want = append(want, "oe")
			if math.Abs(losses[1]-wantOE) > 1e-5 {
				t.Errorf("oe %.7f, want %.7f", losses[1], wantOE)
			}
		}
		if !slices.Equal(step.Terms(), want) {
			t.Fatalf("weight %g: terms %v, want %v", w, step.Terms(), want)
		}
		bias[w] = slices.Clone(b)
	}
	for k := range b0 {
		got := float64(bias[weight][k] - bias[0][k])
		want := -lr * weight * (p[k] - 0.5)
		if math.Abs(got-want) > 1e-5 {
			t.Errorf("bias %d: outlier exposure moved it by %.7f, want %.7f", k, got, want)
		}
	}
	if d0, d1 := math.Abs(float64(bias[0][0]-bias[0][1])), math.Abs(float64(bias[weight][0]-bias[weight][1])); !(d1 < d0) {
		t.Errorf("outlier exposure left the outputs' gap at %.4f, without it %.4f: want it smaller", d1, d0)
	}
}

// TestStage1StepOutlierExposureFashionMNIST runs ten task-1 steps with
// rotation on real images, as train does, twice from the same start: with
// loss.outlier_exposure 0.5 and with a weight too small to train anything
// (1e-6, so the term is still measured). Outlier exposure must leave the
// head's outputs on the outliers closer to uniform (a smaller L_oe, floor
// log 8) while the classes are still learnt (ce falls) with L_ac on.
func TestStage1StepOutlierExposureFashionMNIST(t *testing.T) {
	ds, _, err := data.LoadFashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	const batch, s = 16, 64
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	pre := imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: mean, Std: std}
	images := make([]float32, batch*28*28)
	labels := make([]int, batch)
	for i, j := range ds.Subset([]int{0, 1})[:batch] {
		pre.Normalize(ds.Image(j), images[i*28*28:(i+1)*28*28])
		labels[i] = ds.Labels[j]
	}
	run := func(weight float64) (first, last []float64) {
		rng := rand.New(rand.NewPCG(1, 2))
		backbone, err := models.NewBackbone(arch.ConvNet, 1, s, rng)
		if err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		cfg.Loss.OutlierExposure = weight
		nets := train.Stage1Nets{Backbone: backbone, Head: models.NewLinear(s, 2*4, true, rng)}
		step, err := train.NewStage1Step(cfg, nets, train.Stage1Input{Batch: batch, Channels: 1, Height: 28, Width: 28, Rotation: true, OutlierSeed: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer step.Close()
		if want := []string{"ce", "ac", "oe"}; !slices.Equal(step.Terms(), want) {
			t.Fatalf("terms %v, want %v", step.Terms(), want)
		}
		for i := range 10 {
			if last, err = step.Run(images, labels, cfg.Train.LRFirst); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = last
			}
		}
		return first, last
	}
	first, on := run(0.5)
	_, off := run(1e-6)
	if !(on[0] < first[0]) {
		t.Errorf("with outlier exposure ce %.4f after 10 steps, %.4f after 1: want it to fall", on[0], first[0])
	}
	if floor := math.Log(8); !(on[2] < off[2]) || on[2] < floor-1e-4 {
		t.Errorf("oe %.4f with outlier exposure, %.4f without: want it smaller, and at least log 8 = %.4f", on[2], off[2], floor)
	}
	t.Logf("after 10 steps: ce %.4f / %.4f, ac %.4f / %.4f, oe %.4f / %.4f (on / off)", on[0], off[0], on[1], off[1], on[2], off[2])
}

// TestStage1StepContrastiveFashionMNIST trains Stage I steps with the contrastive term on two augmented views
// of 16 Fashion-MNIST images from data.Batcher (crop and flip drawn twice): the term is reported, is finite, and
// both it and the cross-entropy fall in 15 steps; a batch without its second views and a projection head
// without rotation are errors.
func TestStage1StepContrastiveFashionMNIST(t *testing.T) {
	ds, _, err := data.LoadFashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	const batch, s = 16, 64
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	pre := imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: mean, Std: std}
	b := data.NewBatcher(ds, ds.Subset([]int{0, 1}), data.BatchOptions{BatchSize: batch, Shuffle: true, DropLast: true, Seed: 5,
		Preprocess: pre, Augment: data.Augment{CropPadding: 2, HorizontalFlip: true}})
	images, labels := make([]float32, 2*batch*28*28), make([]int, batch)
	if _, ok := b.Next(images, labels); !ok {
		t.Fatal("no batch")
	}
	b.SecondView(images[batch*28*28:])
	rng := rand.New(rand.NewPCG(1, 2))
	backbone, err := models.NewBackbone(arch.ConvNet, 1, s, rng)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Train.ContrastiveWeight = 1
	nets := train.Stage1Nets{Backbone: backbone, Head: models.NewLinear(s, 2*4, true, rng), Projection: train.NewProjection(s, rng)}
	in := train.Stage1Input{Batch: batch, Channels: 1, Height: 28, Width: 28, Rotation: true, ContrastiveSeed: 3}
	step, err := train.NewStage1Step(cfg, nets, in)
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	if want := []string{"ce", "ac", "ssl"}; !slices.Equal(step.Terms(), want) {
		t.Fatalf("terms %v, want %v", step.Terms(), want)
	}
	if _, err := step.Run(images[:batch*28*28], labels, cfg.Train.LRFirst); err == nil || !strings.Contains(err.Error(), "2 views") {
		t.Errorf("one view per image: error %v, want one naming the 2 views", err)
	}
	var first, last []float64
	for i := range 15 {
		if last, err = step.Run(images, labels, cfg.Train.LRFirst); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = last
		}
	}
	t.Logf("ce %.4f -> %.4f, ssl %.4f -> %.4f (log 63 = %.4f)", first[0], last[0], first[2], last[2], math.Log(63))
	if !(last[0] < first[0]) || !(last[2] < first[2]) {
		t.Errorf("after 15 steps ce %.4f (first %.4f), ssl %.4f (first %.4f): want both to fall", last[0], first[0], last[2], first[2])
	}
	in.Rotation = false
	nets.Head = models.NewLinear(s, 2, true, rng)
	if _, err := train.NewStage1Step(cfg, nets, in); err == nil || !strings.Contains(err.Error(), "needs rotation") {
		t.Errorf("projection head without rotation: error %v, want one naming rotation", err)
	}
}
