package train

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
)

// routingNets are small fixed networks for gradient-routing tests: a convnet
// on 8x8 images with S = 8, a head, and mlp D and A, each cloned per graph so
// that graphs cannot share state.
type routingNets struct {
	backbone *models.Backbone
	head     *models.Linear
	d, a     *models.Mapper
	// rehearsal, when set, adds L_pr with pseudo-features drawn from a
	// fresh rng seeded with rehearsalSeed in every graph.
	rehearsal     *Rehearsal
	rehearsalSeed uint64
}

func newRoutingNets(t *testing.T) routingNets {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	b, err := models.NewBackbone("convnet", 1, 8, rng)
	if err != nil {
		t.Fatal(err)
	}
	d, err := models.NewMapper("mlp", 8, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	a, err := models.NewMapper("mlp", 8, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	return routingNets{backbone: b, head: models.NewLinear(8, 3, true, rng), d: d, a: a}
}

// gradients builds the Stage I graph of cfg for a clone of n, runs one
// forward and backward pass on fixed inputs, and returns the gradient of
// every parameter, grouped by network.
func (n routingNets) gradients(t *testing.T, cfg config.Config) map[string][][]float32 {
	t.Helper()
	const rows, classes = 16, 3
	nets := stage1Nets{backbone: n.backbone.Clone(), head: n.head.Clone(), distiller: n.d.Clone(), adapter: n.a.Clone(),
		rows: rows, numClasses: classes, hasOld: true}
	if n.rehearsal != nil {
		nets.rehearsal = &Rehearsal{Head: n.rehearsal.Head.Clone(), Old: n.rehearsal.Old, PerClass: n.rehearsal.PerClass,
			RNG: rand.New(rand.NewPCG(n.rehearsalSeed, 0))}
	}
	sg, err := buildStage1(cfg, nets, 1, 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer sg.close()
	rng := rand.New(rand.NewPCG(3, 4))
	for i, v := range sg.image.Data().([]float32) {
		sg.image.Data().([]float32)[i] = v + float32(rng.NormFloat64())
	}
	for i := range sg.zOld.Data().([]float32) {
		sg.zOld.Data().([]float32)[i] = float32(rng.NormFloat64())
	}
	oh := sg.onehot.Data().([]float32)
	labels := make([]int, rows)
	for i := 0; i < rows; i++ {
		labels[i] = i % classes
		oh[i*classes+labels[i]] = 1
	}
	if nets.rehearsal != nil {
		if err := fillRehearsal(nets.rehearsal, sg, labels, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := sg.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	defer sg.vm.Reset()
	owner := map[*tensor.Dense]string{}
	for name, ps := range map[string][]*tensor.Dense{"backbone": nets.backbone.Params(), "head": nets.head.Params(),
		"distiller": nets.distiller.Params(), "adapter": nets.adapter.Params(), "rehearsal head": rehearsalParams(nets.rehearsal)} {
		for _, p := range ps {
			owner[p] = name
		}
	}
	out := map[string][][]float32{}
	for _, vg := range G.NodesToValueGrads(sg.params) {
		g, err := vg.Grad()
		if err != nil {
			t.Fatal(err)
		}
		name := owner[vg.Value().(*tensor.Dense)]
		if name == "" {
			t.Fatal("a trained parameter belongs to no network")
		}
		out[name] = append(out[name], append([]float32(nil), g.Data().([]float32)...))
	}
	return out
}

func maxAbsDiff(a, b [][]float32) float64 {
	var worst float64
	for i := range a {
		for j := range a[i] {
			d := float64(a[i][j] - b[i][j])
			worst = max(worst, d, -d)
		}
	}
	return worst
}

func maxAbs(a [][]float32) float64 {
	var worst float64
	for _, v := range a {
		for _, x := range v {
			worst = max(worst, float64(x), -float64(x))
		}
	}
	return worst
}

// TestGradientRouting checks docs/method.md's routing: no cycle gradient reaches
// the backbone, A never pulls the backbone, and CE never reaches A.
func TestGradientRouting(t *testing.T) {
	nets := newRoutingNets(t)
	cfg := config.Default()
	base := nets.gradients(t, cfg)
	for _, name := range []string{"backbone", "head", "distiller", "adapter"} {
		if maxAbs(base[name]) == 0 {
			t.Fatalf("%s gets no gradient at all", name)
		}
	}

	moreCycle := cfg
	moreCycle.Loss.LambdaCyc = 7
	g := nets.gradients(t, moreCycle)
	if d := maxAbsDiff(base["backbone"], g["backbone"]); d != 0 {
		t.Errorf("lambda_cyc changed the backbone's gradient by %g", d)
	}
	if maxAbsDiff(base["adapter"], g["adapter"]) == 0 || maxAbsDiff(base["distiller"], g["distiller"]) == 0 {
		t.Error("lambda_cyc changed neither A's nor D's gradient: the cycle term is not wired")
	}

	// A changes only its own terms: with the bidirectional and pairwise
	// terms off and a different A, the backbone and head see the same gradient.
	noA := cfg
	noA.Loss.Cyc, noA.Loss.Pair = false, false
	noA.Loss.LambdaBi = 1
	g1 := nets.gradients(t, noA)
	other := nets
	other.a = newRoutingNets(t).a
	rng := rand.New(rand.NewPCG(9, 9))
	for _, p := range other.a.Params() {
		for i := range p.Data().([]float32) {
			p.Data().([]float32)[i] = float32(rng.NormFloat64())
		}
	}
	g2 := other.gradients(t, noA)
	if d := maxAbsDiff(g1["backbone"], g2["backbone"]); d != 0 {
		t.Errorf("A's weights changed the backbone's gradient by %g: A pulls the backbone", d)
	}

	// CE does not reach A: changing only the head (which enters only CE)
	// leaves A's gradient unchanged, and the head's gradient does change.
	headChanged := nets
	headChanged.head = models.NewLinear(8, 3, true, rand.New(rand.NewPCG(5, 6)))
	g3 := headChanged.gradients(t, cfg)
	if d := maxAbsDiff(base["adapter"], g3["adapter"]); d != 0 {
		t.Errorf("the head changed A's gradient by %g: CE reaches A", d)
	}
	if maxAbsDiff(base["backbone"], g3["backbone"]) == 0 {
		t.Error("the head did not change the backbone's gradient: CE is not wired to the backbone")
	}
}

// TestPaperCycleReachesBothMaps checks the paper variant of L_cyc: without
// detaching the inner map, D also gets a gradient through A(D(z_new)).
func TestPaperCycleReachesBothMaps(t *testing.T) {
	nets := newRoutingNets(t)
	cfg := config.Default()
	cfg.Loss.Bi, cfg.Loss.Pair = false, false
	cfg.Loss.CycleDetachInner = false
	paper := nets.gradients(t, cfg)
	cfg.Loss.CycleDetachInner = true
	code := nets.gradients(t, cfg)
	if maxAbsDiff(paper["distiller"], code["distiller"]) == 0 {
		t.Error("detaching the inner map made no difference to D's gradient")
	}
}
