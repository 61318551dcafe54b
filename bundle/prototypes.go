package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// Tensor names in prototypes.safetensors, and the metadata key of the
// tables' normalisation flag ("true" or "false").
const (
	tensorMeans           = "means"
	tensorCovariances     = "covariances"
	tensorTableMeans      = "classifier.means"
	tensorTableWhiten     = "classifier.whiten"
	tensorTableBias       = "classifier.bias"
	metadataNormalize     = "classifier.normalize"
	metadataFormat        = "format"
	prototypesFormatValue = "bicyc-prototypes"
)

// ErrPrototypes is wrapped by every error about the content of
// prototypes.safetensors.
var ErrPrototypes = errors.New("invalid prototypes")

// Prototypes are the K Gaussian class prototypes in S dimensions, the only
// memory bicyc keeps of old tasks (docs/method.md, "Stage II"), and the
// classifier tables built from them. Class c is Manifest.Classes[c].
//
//	Means       [K, S]     raw class means mu_c
//	Covariances [K, S, S]  raw class covariances Sigma_c, row-major
//	Tables                 gauss.ClassifierTables (what classifier.onnx holds)
//
// In the file they are float32 tensors "means", "covariances",
// "classifier.means", "classifier.whiten", "classifier.bias" and the
// metadata "classifier.normalize", so that Python can read them with the
// safetensors library.
type Prototypes struct {
	K, S        int
	Means       []float32
	Covariances []float32
	Tables      gauss.ClassifierTables
}

// Validate checks that every slice has the length K and S give, that the
// tables have the same K and S, and that every value is finite; errors
// wrap ErrPrototypes and name the tensor.
func (p Prototypes) Validate() error {
	if p.K < 1 || p.S < 1 {
		return fmt.Errorf("%w: K=%d classes, S=%d dims, want both >= 1", ErrPrototypes, p.K, p.S)
	}
	if p.Tables.K != p.K || p.Tables.S != p.S {
		return fmt.Errorf("%w: classifier tables are for K=%d, S=%d, prototypes for K=%d, S=%d",
			ErrPrototypes, p.Tables.K, p.Tables.S, p.K, p.S)
	}
	for _, t := range p.tensors() {
		if len(t.Data) != t.Len() {
			return fmt.Errorf("%w: tensor %q has %d values, want %v = %d", ErrPrototypes, t.Name, len(t.Data), t.Shape, t.Len())
		}
		for i, v := range t.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%w: tensor %q has non-finite value %v at index %d", ErrPrototypes, t.Name, v, i)
			}
		}
	}
	return nil
}

func (p Prototypes) tensors() []safetensors.Tensor {
	k, s := p.K, p.S
	return []safetensors.Tensor{
		{Name: tensorMeans, Shape: []int{k, s}, Data: p.Means},
		{Name: tensorCovariances, Shape: []int{k, s, s}, Data: p.Covariances},
		{Name: tensorTableMeans, Shape: []int{k, s}, Data: p.Tables.Means},
		{Name: tensorTableWhiten, Shape: []int{k, s, s}, Data: p.Tables.Whiten},
		{Name: tensorTableBias, Shape: []int{k}, Data: p.Tables.Bias},
	}
}

// Encode returns p as the bytes of prototypes.safetensors, after Validate.
func (p Prototypes) Encode() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	meta := map[string]string{metadataFormat: prototypesFormatValue, metadataNormalize: fmt.Sprint(p.Tables.Normalize)}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, p.tensors(), meta); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPrototypes, err)
	}
	return buf.Bytes(), nil
}

// DecodePrototypes parses prototypes.safetensors. It never panics on
// malformed input: errors wrap ErrPrototypes (and safetensors.ErrFormat for
// a damaged file) and name the offending tensor.
func DecodePrototypes(b []byte) (Prototypes, error) {
	tensors, meta, err := safetensors.Decode(b)
	if err != nil {
		return Prototypes{}, fmt.Errorf("%w: %w", ErrPrototypes, err)
	}
	means, ok := safetensors.Find(tensors, tensorMeans)
	if !ok || len(means.Shape) != 2 {
		return Prototypes{}, fmt.Errorf("%w: tensor %q missing or not [K,S] (shape %v)", ErrPrototypes, tensorMeans, means.Shape)
	}
	k, s := means.Shape[0], means.Shape[1]
	want := []struct {
		name  string
		shape []int
	}{
		{tensorMeans, []int{k, s}},
		{tensorCovariances, []int{k, s, s}},
		{tensorTableMeans, []int{k, s}},
		{tensorTableWhiten, []int{k, s, s}},
		{tensorTableBias, []int{k}},
	}
	got := make(map[string][]float32, len(want))
	for _, w := range want {
		name, shape := w.name, w.shape
		t, ok := safetensors.Find(tensors, name)
		if !ok {
			return Prototypes{}, fmt.Errorf("%w: tensor %q is missing", ErrPrototypes, name)
		}
		if !slices.Equal(t.Shape, shape) {
			return Prototypes{}, fmt.Errorf("%w: tensor %q has shape %v, want %v", ErrPrototypes, name, t.Shape, shape)
		}
		got[name] = t.Data
	}
	var normalize bool
	switch meta[metadataNormalize] {
	case "true":
		normalize = true
	case "false":
	default:
		return Prototypes{}, fmt.Errorf("%w: metadata %q is %q, want \"true\" or \"false\"", ErrPrototypes, metadataNormalize, meta[metadataNormalize])
	}
	p := Prototypes{
		K: k, S: s, Means: got[tensorMeans], Covariances: got[tensorCovariances],
		Tables: gauss.ClassifierTables{K: k, S: s, Means: got[tensorTableMeans], Whiten: got[tensorTableWhiten],
			Bias: got[tensorTableBias], Normalize: normalize},
	}
	if err := p.Validate(); err != nil {
		return Prototypes{}, err
	}
	return p, nil
}
