package train_test

import (
	"slices"
	"testing"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/train"
)

// pairStep runs one Stage I step of bicyc on an 8-image batch with the given
// L_pair sampling, row count and seed, and returns the loss terms by name
// and the distiller's and adapter's weights after the update.
func pairStep(t *testing.T, sampling string, rows int, seed int64) (map[string]float64, [][]float32) {
	t.Helper()
	cfg := config.Default()
	cfg.Loss.PairSampling, cfg.Loss.PairRows = sampling, rows
	nets := smallNets(t, 2)
	st, err := train.NewStage1Step(cfg, nets, train.Stage1Input{Batch: 8, Channels: 1, Height: 8, Width: 8, PairSeed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	images, labels := smallBatch(8, 2)
	vals, err := st.Run(images, labels, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	terms := map[string]float64{}
	for i, name := range st.Terms() {
		terms[name] = vals[i]
	}
	return terms, weights(append(nets.Distiller.Params(), nets.Adapter.Params()...))
}

// TestPairSampling checks loss.pair_sampling: with the batch no larger than
// loss.pair_rows, random and first are the same step bit for bit; with more
// rows, random changes L_pair and nothing else the step computes, the same
// seed gives the same rows and another seed other rows.
func TestPairSampling(t *testing.T) {
	sameTerms := func(a, b map[string]float64, except string) bool {
		for name, v := range a {
			if name != except && b[name] != v {
				return false
			}
		}
		return len(a) == len(b)
	}
	allFirst, wFirst := pairStep(t, config.PairSamplingFirst, 8, 1)
	allRandom, wRandom := pairStep(t, config.PairSamplingRandom, 8, 1)
	if !sameTerms(allFirst, allRandom, "") || !slices.EqualFunc(wFirst, wRandom, slices.Equal) {
		t.Errorf("batch 8 of pair_rows 8: random %v differs from first %v", allRandom, allFirst)
	}
	first, _ := pairStep(t, config.PairSamplingFirst, 4, 1)
	random, wSeed1 := pairStep(t, config.PairSamplingRandom, 4, 1)
	again, wAgain := pairStep(t, config.PairSamplingRandom, 4, 1)
	other, _ := pairStep(t, config.PairSamplingRandom, 4, 2)
	if _, ok := first["pair"]; !ok {
		t.Fatalf("no pair term in %v", first)
	}
	if !sameTerms(first, random, "pair") || random["pair"] == first["pair"] {
		t.Errorf("4 of 8 rows: random %v, first %v: want only pair to differ", random, first)
	}
	if !sameTerms(random, again, "") || !slices.EqualFunc(wSeed1, wAgain, slices.Equal) {
		t.Errorf("same seed, different steps: %v and %v", random, again)
	}
	if !sameTerms(random, other, "pair") || random["pair"] == other["pair"] {
		t.Errorf("seeds 1 and 2: %v and %v: want only pair to differ", random, other)
	}
}
