package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// Tensor names in prototypes.safetensors, and the metadata key of the
// tables' normalisation flag ("true" or "false"). Files written before the
// class table moved to ClassifierDataFile hold full covariances
// (tensorCovariancesFull) and the factored tables (classifier.means,
// classifier.whiten), which DecodePrototypes still reads.
const (
	tensorMeans           = "means"
	tensorCovariances     = "covariances_upper"
	tensorCovariancesFull = "covariances"
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
// per-class bias of the classifier built from them. Class c is
// Manifest.Classes[c].
//
//	Means       [K, S]           raw class means mu_c
//	Covariances [K, S(S+1)/2]    raw class covariances Sigma_c, the upper
//	                             triangle of each, row-major (i <= j)
//	Bias        [K]              b_c of gauss.ClassifierTables
//	Normalize                    gauss.ClassifierTables.Normalize
//
// In the file they are float32 tensors "means", "covariances_upper",
// "classifier.bias" and the metadata "classifier.normalize", so that Python
// can read them with the safetensors library. The classifier's own table
// lives once, in ClassifierDataFile; each class costs 4*(S(S+1)/2 + S + 1)
// bytes here.
type Prototypes struct {
	K, S        int
	Means       []float32
	Covariances []float32
	Bias        []float32
	Normalize   bool
}

// PackedDim returns S(S+1)/2, the length of one packed covariance.
func PackedDim(s int) int { return s * (s + 1) / 2 }

// NewPrototypes packs the Gaussians protos (class c is protos[c]) with the
// classifier's bias and normalisation flag. It panics if the Gaussians
// differ in dimension or len(bias) != len(protos).
func NewPrototypes(protos []gauss.Gaussian, bias []float32, normalize bool) Prototypes {
	if len(bias) != len(protos) || len(protos) == 0 {
		panic(fmt.Sprintf("bundle: prototypes: %d Gaussians, %d biases", len(protos), len(bias)))
	}
	s := protos[0].Dim()
	p := Prototypes{K: len(protos), S: s, Bias: slices.Clone(bias), Normalize: normalize,
		Means: make([]float32, 0, len(protos)*s), Covariances: make([]float32, 0, len(protos)*PackedDim(s))}
	for c, g := range protos {
		if g.Dim() != s {
			panic(fmt.Sprintf("bundle: prototypes: class %d has dimension %d, class 0 has %d", c, g.Dim(), s))
		}
		for i := range s {
			p.Means = append(p.Means, float32(g.Mean[i]))
			for j := i; j < s; j++ {
				p.Covariances = append(p.Covariances, float32(g.Cov.At(i, j)))
			}
		}
	}
	return p
}

// Gaussians returns the prototypes as float64 Gaussians, class c at index c.
func (p Prototypes) Gaussians() []gauss.Gaussian {
	out := make([]gauss.Gaussian, p.K)
	d := PackedDim(p.S)
	for c := range p.K {
		mean := make([]float64, p.S)
		for i, v := range p.Means[c*p.S : (c+1)*p.S] {
			mean[i] = float64(v)
		}
		cov := mat.NewSymDense(p.S, nil)
		packed := p.Covariances[c*d : (c+1)*d]
		n := 0
		for i := range p.S {
			for j := i; j < p.S; j++ {
				cov.SetSym(i, j, float64(packed[n]))
				n++
			}
		}
		out[c] = gauss.Gaussian{Mean: mean, Cov: cov}
	}
	return out
}

// PackCovariances packs K full row-major S x S matrices ([K, S, S]) into
// their upper triangles ([K, S(S+1)/2]), entry (i, j) the mean of the
// full matrix's (i, j) and (j, i) so a slightly asymmetric one is
// symmetrised. It panics if len(full) != K*S*S.
func PackCovariances(full []float32, k, s int) []float32 {
	if len(full) != k*s*s {
		panic(fmt.Sprintf("bundle: pack covariances: %d values for %d matrices of %dx%d", len(full), k, s, s))
	}
	out := make([]float32, 0, k*PackedDim(s))
	for c := range k {
		m := full[c*s*s : (c+1)*s*s]
		for i := range s {
			for j := i; j < s; j++ {
				out = append(out, float32(0.5*(float64(m[i*s+j])+float64(m[j*s+i]))))
			}
		}
	}
	return out
}

// Validate checks that every slice has the length K and S give and that
// every value is finite; errors wrap ErrPrototypes and name the tensor.
func (p Prototypes) Validate() error {
	if p.K < 1 || p.S < 1 {
		return fmt.Errorf("%w: K=%d classes, S=%d dims, want both >= 1", ErrPrototypes, p.K, p.S)
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
		{Name: tensorCovariances, Shape: []int{k, PackedDim(s)}, Data: p.Covariances},
		{Name: tensorTableBias, Shape: []int{k}, Data: p.Bias},
	}
}

// Encode returns p as the bytes of prototypes.safetensors, after Validate.
func (p Prototypes) Encode() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	meta := map[string]string{metadataFormat: prototypesFormatValue, metadataNormalize: fmt.Sprint(p.Normalize)}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, p.tensors(), meta); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPrototypes, err)
	}
	return buf.Bytes(), nil
}

// DecodePrototypes parses prototypes.safetensors, of this layout or the
// older one with full covariances (which it packs). It never panics on
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
	find := func(name string, shape ...int) ([]float32, error) {
		t, ok := safetensors.Find(tensors, name)
		if !ok {
			return nil, fmt.Errorf("%w: tensor %q is missing", ErrPrototypes, name)
		}
		if !slices.Equal(t.Shape, shape) {
			return nil, fmt.Errorf("%w: tensor %q has shape %v, want %v", ErrPrototypes, name, t.Shape, shape)
		}
		return t.Data, nil
	}
	p := Prototypes{K: k, S: s, Means: means.Data}
	if _, full := safetensors.Find(tensors, tensorCovariancesFull); full {
		covs, err := find(tensorCovariancesFull, k, s, s)
		if err != nil {
			return Prototypes{}, err
		}
		p.Covariances = PackCovariances(covs, k, s)
	} else if p.Covariances, err = find(tensorCovariances, k, PackedDim(s)); err != nil {
		return Prototypes{}, err
	}
	if p.Bias, err = find(tensorTableBias, k); err != nil {
		return Prototypes{}, err
	}
	switch meta[metadataNormalize] {
	case "true":
		p.Normalize = true
	case "false":
	default:
		return Prototypes{}, fmt.Errorf("%w: metadata %q is %q, want \"true\" or \"false\"", ErrPrototypes, metadataNormalize, meta[metadataNormalize])
	}
	if err := p.Validate(); err != nil {
		return Prototypes{}, err
	}
	return p, nil
}
