package train

import (
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
)

// TestStepLearningRateRounding checks train.milestone_rounding against the
// rates PyTorch's MultiStepLR gives with the authors' milestones
// int(0.3E), int(0.6E), int(0.9E) (measured with torch 1.13: E = 2 gives
// 0.1, 0.001 times the base; E = 3 gives 0.1, 0.01, 0.001; E = 4 and 10
// decay at epochs 1, 2, 3 and 3, 6, 9), and that round is LearningRate.
func TestStepLearningRateRounding(t *testing.T) {
	ms := []float64{0.3, 0.6, 0.9}
	for i, c := range []struct {
		epochs          int
		truncate, round []float64
	}{
		{2, []float64{0.1, 0.001}, []float64{1, 0.01}},
		{3, []float64{0.1, 0.01, 0.001}, []float64{1, 0.1, 0.01}},
		{4, []float64{1, 0.1, 0.01, 0.001}, []float64{1, 0.1, 0.01, 0.01}},
		{10, []float64{1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01, 0.001}, []float64{1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01, 0.001}},
	} {
		for e := range c.epochs {
			tr := StepLearningRate(1, 0.1, ms, config.MilestoneTruncate, e, c.epochs)
			ro := StepLearningRate(1, 0.1, ms, config.MilestoneRound, e, c.epochs)
			if !nearly(tr, c.truncate[e]) || !nearly(ro, c.round[e]) {
				t.Errorf("case %d: epoch %d of %d: truncate %g round %g, want %g and %g", i, e, c.epochs, tr, ro, c.truncate[e], c.round[e])
			}
			if lr := LearningRate(1, 0.1, ms, e, c.epochs); lr != ro {
				t.Errorf("case %d: LearningRate %g != round %g", i, lr, ro)
			}
		}
	}
}

func nearly(a, b float64) bool { return abs(a-b) <= 1e-12*max(abs(a), abs(b)) }

// TestPairSelectionDraw checks the random rows of L_pair: each selection
// picks k distinct rows, the two terms draw their own, and every row is
// drawn over many steps.
func TestPairSelectionDraw(t *testing.T) {
	const k, b = 4, 10
	p := newPairSelection(G.NewGraph(), k, b)
	rng := rand.New(rand.NewPCG(1, 2))
	seen := make([]bool, b)
	differ := false
	for range 50 {
		p.draw(rng)
		var rows [2][]int
		for i, d := range p.dense {
			sel := d.Data().([]float32)
			for r := range k {
				one := slices.Index(sel[r*b:(r+1)*b], 1)
				if one < 0 || slices.Contains(rows[i], one) {
					t.Fatalf("selection %d row %d: %v", i, r, sel[r*b:(r+1)*b])
				}
				rows[i] = append(rows[i], one)
				seen[one] = true
			}
			var ones float32
			for _, v := range sel {
				ones += v
			}
			if ones != k {
				t.Fatalf("selection %d has %v ones, want %d", i, ones, k)
			}
		}
		differ = differ || !slices.Equal(rows[0], rows[1])
	}
	if !differ || slices.Contains(seen, false) {
		t.Errorf("over 50 draws: terms drew different rows %v, rows seen %v", differ, seen)
	}
}

// adapterAfter trains a fresh linear adapter for epochs on fixed random
// feature pairs with the adapter milestones ms and lr_decay decay, and
// returns its weight.
func adapterAfter(t *testing.T, epochs int, ms []float64, decay float64) []float32 {
	t.Helper()
	const n, s = 64, 4
	cfg := config.Default()
	cfg.Train.BatchSize = 16
	cfg.Adapter.Milestones, cfg.Train.LRDecay = ms, decay
	rng := rand.New(rand.NewPCG(3, 4))
	zOld, zNew := make([]float32, n*s), make([]float32, n*s)
	for i := range zOld {
		zOld[i], zNew[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	a, err := models.NewMapper(arch.Linear, s, 1, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trainAdapter(cfg, a, zOld, zNew, n, s, epochs, rand.New(rand.NewPCG(7, 8)), nil); err != nil {
		t.Fatal(err)
	}
	return slices.Clone(a.Params()[0].Data().([]float32))
}

// TestAdapterMilestones checks adapter.milestones: with a milestone at half
// of 4 epochs and lr_decay 0 the adapter stops where 2 epochs at the
// constant rate leave it, bit for bit; without milestones it keeps moving.
func TestAdapterMilestones(t *testing.T) {
	two := adapterAfter(t, 2, nil, 0)
	if got := adapterAfter(t, 4, []float64{0.5}, 0); !slices.Equal(got, two) {
		t.Errorf("milestone 0.5 of 4 epochs at decay 0: weight %v, want the 2-epoch weight %v", got, two)
	}
	if got := adapterAfter(t, 4, nil, 0); slices.Equal(got, two) {
		t.Error("4 epochs without milestones end where 2 do")
	}
}
