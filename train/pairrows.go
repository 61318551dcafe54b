package train

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// pairSelection holds the random rows of L_pair (loss.pair_sampling random,
// docs/method.md: "on at most 128 random rows"): for each of L_pair's two
// terms a one-hot matrix sel [k,B] whose product sel X picks k distinct
// rows of a batch X [B,S]. Each term draws its own rows every step, as the
// authors' code draws a fresh permutation in each call.
type pairSelection struct {
	dense [2]*tensor.Dense
	nodes [2]*G.Node
	rows  int // B
}

// newPairSelection adds the two selection inputs of k of b rows to g.
func newPairSelection(g *G.ExprGraph, k, b int) *pairSelection {
	p := &pairSelection{rows: b}
	for i, name := range []string{"pair_rows_new", "pair_rows_old"} {
		p.dense[i] = tensor.New(tensor.WithShape(k, b), tensor.Of(tensor.Float32))
		p.nodes[i] = G.NewMatrix(g, tensor.Float32, G.WithShape(k, b), G.WithName(name), G.WithValue(p.dense[i]))
	}
	return p
}

// draw sets both selections to k fresh distinct rows drawn from rng.
func (p *pairSelection) draw(rng *rand.Rand) {
	for _, d := range p.dense {
		sel := d.Data().([]float32)
		clear(sel)
		k := len(sel) / p.rows
		for i, row := range rng.Perm(p.rows)[:k] {
			sel[i*p.rows+row] = 1
		}
	}
}

// pick returns the rows term i selects from x [B,S], or x itself without
// a selection.
func (p *pairSelection) pick(i int, x *G.Node) (*G.Node, error) {
	if p == nil {
		return x, nil
	}
	return G.Mul(p.nodes[i], x)
}
