package train

import (
	G "gorgonia.org/gorgonia"

	"github.com/bicyc/bicyc/models"
)

func buildBackbone(b *models.Backbone, g *G.ExprGraph, x *G.Node, training bool) (*G.Node, G.Nodes, error) {
	built, err := b.Build(g, x, training)
	if err != nil {
		return nil, nil, err
	}
	return built.Output, built.Params, nil
}

func buildLinear(l *models.Linear, g *G.ExprGraph, x *G.Node) (*G.Node, G.Nodes, error) {
	built, err := l.Build(g, x)
	if err != nil {
		return nil, nil, err
	}
	return built.Output, built.Params, nil
}

// boundMapper applies one mapper (D or A) to several inputs of one graph.
// gorgonia merges input nodes of equal name, type and shape, so every
// application binds the same parameter nodes and their gradients add up.
type boundMapper struct {
	m      *models.Mapper
	g      *G.ExprGraph
	params G.Nodes
}

func bindMapper(m *models.Mapper, g *G.ExprGraph) *boundMapper {
	return &boundMapper{m: m, g: g}
}

func (b *boundMapper) apply(x *G.Node) (*G.Node, error) {
	built, err := b.m.Build(b.g, x)
	if err != nil {
		return nil, err
	}
	if b.params == nil {
		b.params = built.Params
	}
	return built.Output, nil
}
