package models

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/safetensors"
)

// Model files for tests: a model's state in a safetensors file with its
// architecture and sizes in the metadata, so that a test can save a model
// and rebuild it from the file alone. Training keeps its state in
// checkpoints (package train) and ships it in model bundles (package
// export); these helpers exist to test State and SetState against files.

// Save writes State to a safetensors file at path, atomically, with the architecture and sizes (a ResNet's
// width too) in the metadata so that LoadBackbone can rebuild the backbone. Frozen stages are not recorded.
func (b *Backbone) Save(path string) error {
	meta := map[string]string{"arch": string(b.arch), "in_channels": strconv.Itoa(b.inChannels), "feature_dim": strconv.Itoa(b.featureDim)}
	if b.width != 0 {
		meta["width"] = strconv.Itoa(b.width)
	}
	return writeModelFile(path, "backbone", b.State(), meta)
}

// LoadBackbone reads a backbone written by Save. Errors name the file; a file that is not a backbone's, or
// whose tensors do not match its metadata, gives an error wrapping ErrBadState.
func LoadBackbone(path string) (*Backbone, error) {
	tensors, meta, err := readModelFile(path, "backbone")
	if err != nil {
		return nil, err
	}
	in, err := metaInt(path, meta, "in_channels")
	if err != nil {
		return nil, err
	}
	s, err := metaInt(path, meta, "feature_dim")
	if err != nil {
		return nil, err
	}
	width := 0 // files written before widths were recorded hold standard ResNets
	if _, ok := meta["width"]; ok {
		if width, err = metaInt(path, meta, "width"); err != nil {
			return nil, err
		}
	}
	stem, k := ResNetWidth, 3
	if width != 0 {
		stem = width
	}
	a := arch.Backbone(meta["arch"])
	switch a {
	case arch.ConvNet:
		stem = 32
	case arch.ResNet18ImageNet:
		k = 7
	case arch.ResNet18:
	default:
		return nil, fmt.Errorf("%s: unknown backbone architecture %q: %w", path, meta["arch"], ErrBadState)
	}
	if err := requireShape(path, tensors, "conv1.weight", stem, in, k, k); err != nil {
		return nil, err
	}
	if err := requireShape(path, tensors, "reduce.bias", s); err != nil {
		return nil, err
	}
	b, err := newBackbone(a, width, in, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := b.SetState(tensors); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Save writes the layer's state (names "weight", "bias") to a safetensors file at path, atomically, with its
// sizes in the metadata so that LoadLinear can rebuild it.
func (l *Linear) Save(path string) error {
	return writeModelFile(path, "linear", l.State(""), map[string]string{
		"in": strconv.Itoa(l.in), "out": strconv.Itoa(l.out), "bias": strconv.FormatBool(l.bias != nil)})
}

// LoadLinear reads a Linear written by Save. Errors name the file; a file that is not a Linear's, or whose
// tensors do not match its metadata, gives an error wrapping ErrBadState.
func LoadLinear(path string) (*Linear, error) {
	tensors, meta, err := readModelFile(path, "linear")
	if err != nil {
		return nil, err
	}
	in, err := metaInt(path, meta, "in")
	if err != nil {
		return nil, err
	}
	out, err := metaInt(path, meta, "out")
	if err != nil {
		return nil, err
	}
	bias, err := strconv.ParseBool(meta["bias"])
	if err != nil {
		return nil, fmt.Errorf("%s: metadata bias is %q, want true or false: %w", path, meta["bias"], ErrBadState)
	}
	if err := requireShape(path, tensors, "weight", out, in); err != nil {
		return nil, err
	}
	l := newLinear(in, out, bias)
	if err := l.SetState("", tensors); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// Save writes State to a safetensors file at path, atomically, with the kind and sizes in the metadata so that
// LoadMapper can rebuild the mapper.
func (m *Mapper) Save(path string) error {
	return writeModelFile(path, "mapper", m.State(), map[string]string{
		"kind": string(m.kind), "dim": strconv.Itoa(m.dim), "hidden_mult": strconv.Itoa(m.hiddenMult)})
}

// LoadMapper reads a mapper written by Save. Errors name the file; a file that is not a mapper's, or whose
// tensors do not match its metadata, gives an error wrapping ErrBadState.
func LoadMapper(path string) (*Mapper, error) {
	tensors, meta, err := readModelFile(path, "mapper")
	if err != nil {
		return nil, err
	}
	s, err := metaInt(path, meta, "dim")
	if err != nil {
		return nil, err
	}
	kind, hiddenMult := arch.Mapper(meta["kind"]), 0
	switch kind {
	case arch.MLP, arch.ResidualMLP:
		if hiddenMult, err = metaInt(path, meta, "hidden_mult"); err != nil {
			return nil, err
		}
		err = requireShape(path, tensors, "fc1.weight", hiddenMult*s, s)
	case arch.Linear, arch.LinearBias:
		err = requireShape(path, tensors, "weight", s, s)
	default:
		err = fmt.Errorf("%s: unknown mapper kind %q: %w", path, kind, ErrBadState)
	}
	if err != nil {
		return nil, err
	}
	m := newMapper(kind, s, hiddenMult, newLinear)
	if err := m.SetState(tensors); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// metaModel is the metadata key naming which model a file holds.
const metaModel = "bicyc.model"

// writeModelFile writes tensors and meta, plus metaModel = model, to path atomically.
func writeModelFile(path, model string, tensors []safetensors.Tensor, meta map[string]string) error {
	all := map[string]string{metaModel: model}
	for k, v := range meta {
		all[k] = v
	}
	if err := safetensors.WriteFile(path, tensors, all); err != nil {
		return fmt.Errorf("saving %s: %w", model, err)
	}
	return nil
}

// readModelFile reads path and checks that it holds a model of the given kind.
func readModelFile(path, model string) ([]safetensors.Tensor, map[string]string, error) {
	tensors, meta, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("loading %s: %w", model, err)
	}
	if got := meta[metaModel]; got != model {
		return nil, nil, fmt.Errorf("loading %s: %s: metadata %s is %q, want %q: %w", model, path, metaModel, got, model, ErrBadState)
	}
	return tensors, meta, nil
}

// metaInt parses the positive integer stored under key in a file's metadata.
func metaInt(path string, meta map[string]string, key string) (int, error) {
	v, err := strconv.Atoi(meta[key])
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%s: metadata %s is %q, want a positive integer: %w", path, key, meta[key], ErrBadState)
	}
	return v, nil
}

// requireShape returns an error unless tensors holds name with exactly the given shape. Loaders call it before
// allocating a model from sizes found in a file's metadata, so a corrupt header cannot make them allocate more
// than the file holds.
func requireShape(path string, tensors []safetensors.Tensor, name string, shape ...int) error {
	t, ok := safetensors.Find(tensors, name)
	if !ok {
		return fmt.Errorf("%s: missing tensor %q: %w", path, name, ErrBadState)
	}
	if !slices.Equal(t.Shape, shape) {
		return fmt.Errorf("%s: tensor %q has shape %v, want %v from the metadata: %w", path, name, t.Shape, shape, ErrBadState)
	}
	return nil
}

// trimPrefix returns the tensors whose name starts with prefix, with prefix removed: the inverse of WithPrefix
// on a file holding several models. The data is shared, not copied.
func trimPrefix(prefix string, tensors []safetensors.Tensor) []safetensors.Tensor {
	var out []safetensors.Tensor
	for _, t := range tensors {
		if rest, ok := strings.CutPrefix(t.Name, prefix); ok {
			t.Name = rest
			out = append(out, t)
		}
	}
	return out
}
