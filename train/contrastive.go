package train

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
)

// Projection is the contrastive projection head of task 1 (train.contrastive_weight; docs/method.md,
// Contrastive task 1): SimCLR's two-layer MLP, S -> S with ReLU, then S -> S, whose outputs NT-Xent compares.
// It is trained in Stage I of task 1 beside the task's head and then dropped: the features, not the
// projections, become the prototypes, as in SimCLR.
type Projection struct {
	hidden, out *models.Linear
}

// NewProjection returns a projection head on s features, initialised from rng as nn.Linear is.
func NewProjection(s int, rng *rand.Rand) *Projection {
	return &Projection{hidden: models.NewLinear(s, s, true, rng), out: models.NewLinear(s, s, true, rng)}
}

// build applies the head to the features z [R,S] in g and returns the projections and the head's parameters.
func (p *Projection) build(g *G.ExprGraph, z *G.Node) (*G.Node, G.Nodes, error) {
	h, params, err := buildLinear(p.hidden, g, z)
	if err != nil {
		return nil, nil, err
	}
	if h, err = ops.ReLU(h); err != nil {
		return nil, nil, err
	}
	out, more, err := buildLinear(p.out, g, h)
	if err != nil {
		return nil, nil, err
	}
	return out, append(params, more...), nil
}

// contrastiveTerm adds L_ssl = NT-Xent(P(z_new)) at train.contrastive_weight and appends the projection
// head's parameters to params; it does nothing without a projection head p. Rows 2k and 2k+1 of z_new are
// the two views of one image at one turn (Stage1Step.Run's layout).
func contrastiveTerm(cfg config.Config, p *Projection, g *G.ExprGraph, zNew *G.Node, params *G.Nodes, add func(string, *G.Node, float64) error) error {
	if p == nil {
		return nil
	}
	proj, more, err := p.build(g, zNew)
	if err != nil {
		return err
	}
	loss, err := ops.NTXent(proj, cfg.Train.ContrastiveTemperature)
	if err != nil {
		return err
	}
	*params = append(*params, more...)
	return add("ssl", loss, cfg.Train.ContrastiveWeight)
}

// contrastiveRows writes the rows of one image for the contrastive layout: its first view a and second view b
// at turn q and at turn q+2, as rows a@q, b@q, a@q+2, b@q+2, with q drawn from rng in {0, 1}; turns[j] is the
// turn of row j. Every image thus trains two of its four turns per step, the two views of each turn forming
// NT-Xent's positive pair.
func contrastiveRows(rng *rand.Rand, a, b []float32, dst []float32, c, h, w int, turns *[4]int) {
	q := rng.IntN(2)
	size := c * h * w
	for j, v := range [4]struct {
		src  []float32
		turn int
	}{{a, q}, {b, q}, {a, q + 2}, {b, q + 2}} {
		rotate90(v.src, dst[j*size:(j+1)*size], c, h, w, v.turn)
		turns[j] = v.turn
	}
}
