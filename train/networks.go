package train

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/pretrained"
)

// newBackbone returns the backbone cfg describes (model.backbone, model.width, data.channels,
// model.feature_dim) with model.freeze_stages frozen, initialised from rng: the shape a checkpoint's weights
// are loaded into.
func newBackbone(cfg config.Config, rng *rand.Rand) (*models.Backbone, error) {
	b, err := models.NewBackboneWidth(cfg.Model.Backbone, cfg.Model.Width, cfg.Data.Channels, cfg.Model.FeatureDim, rng)
	if err != nil {
		return nil, err
	}
	if err := b.FreezeStages(cfg.Model.FreezeStages); err != nil {
		return nil, err
	}
	return b, nil
}

// initialBackbone returns the backbone a run starts task 1 with: newBackbone, with the weights of
// model.pretrained when it is set (every layer but the 1x1 reduction, which keeps rng's initialisation).
func initialBackbone(cfg config.Config, rng *rand.Rand) (*models.Backbone, error) {
	b, err := newBackbone(cfg, rng)
	if err != nil || cfg.Model.Pretrained == "" {
		return b, err
	}
	if err := pretrained.ResNet18(cfg.Model.Pretrained, b); err != nil {
		return nil, err
	}
	return b, nil
}

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

// mapperKind is the models mapper kind of D and A: model.mapper, with
// model.linear_bias choosing the linear map with a bias.
func mapperKind(m config.Model) arch.Mapper {
	if m.Mapper == arch.Linear && m.LinearBias {
		return arch.LinearBias
	}
	return m.Mapper
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
