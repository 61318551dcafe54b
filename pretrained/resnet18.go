package pretrained

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/owulveryck/onnx-go"
	"github.com/owulveryck/onnx-go/backend/x/gorgonnx"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/safetensors"
)

// Sentinels wrapped by ResNet18's errors, one per problem a user can fix.
var (
	// ErrNotONNX: the file is empty, truncated or not an ONNX model.
	ErrNotONNX = errors.New("not a complete ONNX model")
	// ErrFoldedBatchNorm: the exporter folded BatchNorm into the convolutions, so the BatchNorm weights and
	// running statistics a fine-tune needs are gone.
	ErrFoldedBatchNorm = errors.New("BatchNorm folded into the convolutions")
	// ErrExternalData: tensor data lives in files beside the model instead of inside it.
	ErrExternalData = errors.New("tensor data stored outside the model file")
	// ErrFloat16: the model holds float16 tensors; bicyc trains in float32.
	ErrFloat16 = errors.New("float16 tensors")
	// ErrArchitecture: the network is not a torchvision ResNet-18.
	ErrArchitecture = errors.New("not a torchvision ResNet-18")
	// ErrTensor: a tensor the backbone needs is missing, misshapen or not float32.
	ErrTensor = errors.New("missing or misshapen tensor")
)

// exportFix is how to export a torchvision model so that its BatchNorm tensors keep their state-dict names.
const exportFix = "export with torch.onnx.export(model, x, path, opset_version=17, " +
	"training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)"

// ResNet18 copies the weights of the torchvision ResNet-18 in the ONNX file at path into b, which must be a
// arch.ResNet18ImageNet backbone with 3 input channels and the file's width (64 for torchvision's
// resnet18). Every tensor of b's State except the 1x1 reduction's (reduce.weight, reduce.bias) comes from the
// file under the same name: conv1.weight, bn1.{weight,bias,running_mean,running_var}, layer1.0.conv1.weight,
// ... layer4.0.downsample.1.running_var. The reduction keeps the values b has (NewBackbone's initialisation:
// weights N(0, 2/S), bias 0), as the authors' code leaves its bottleneck untouched when loading torchvision
// weights; fc and num_batches_tracked are ignored. Identity outputs that torch's exporter puts in place of
// deduplicated tensors are followed to their source.
//
// On error b is unchanged. Errors name path, wrap one of the package's sentinels (or models.ErrBadState for
// non-finite values) and say how to fix the file; several tensor problems are joined into one error.
func ResNet18(path string, b *models.Backbone) error {
	if b.Arch() != arch.ResNet18ImageNet {
		return fmt.Errorf("pretrained %s: the backbone is %s; a torchvision ResNet-18 needs model.backbone %s (7x7 stem and max-pool): %w",
			path, b.Arch(), arch.ResNet18ImageNet, ErrArchitecture)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("pretrained: %w", err)
	}
	named, err := decode(raw)
	if err != nil {
		return fmt.Errorf("pretrained %s: %w", path, err)
	}
	state, err := match(named, b)
	if err != nil {
		return fmt.Errorf("pretrained %s: %w", path, err)
	}
	if err := b.SetState(state); err != nil {
		return fmt.Errorf("pretrained %s: %w", path, err)
	}
	return nil
}

// decode reads an ONNX model with onnx-go and returns its named tensors: initializers, and the outputs of
// Identity nodes under their own names with their source's tensor.
func decode(raw []byte) (named map[string]tensor.Tensor, err error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrNotONNX)
	}
	// onnx-go decodes outside input; a panic in it must not take the trainer down.
	defer func() {
		if r := recover(); r != nil {
			named, err = nil, fmt.Errorf("%w: the ONNX decoder failed on it (%v); is the file complete?", ErrNotONNX, r)
		}
	}()
	g := gorgonnx.NewGraph()
	m := onnx.NewModel(g)
	if err := m.UnmarshalBinary(raw); err != nil {
		return nil, decodeError(err)
	}
	inputs := map[int64]bool{}
	for _, id := range m.Input {
		inputs[id] = true
	}
	named = map[string]tensor.Tensor{}
	nodes := g.Nodes()
	for nodes.Next() {
		n, ok := nodes.Node().(*gorgonnx.Node)
		if !ok || inputs[n.ID()] || n.GetName() == "" {
			continue
		}
		if t := source(g, n); t != nil {
			named[n.GetName()] = t
		}
	}
	return named, nil
}

// source returns n's tensor, or for a value computed from exactly one other (an Identity output), that
// value's source; nil for anything else. Edges of onnx-go's graph point from an operator's output to its
// inputs.
func source(g *gorgonnx.Graph, n *gorgonnx.Node) tensor.Tensor {
	for range 8 { // torch chains Identity nodes at most a few deep
		if t := n.GetTensor(); t != nil {
			return t
		}
		from := g.From(n.ID())
		if from.Len() != 1 || !from.Next() {
			return nil
		}
		next, ok := from.Node().(*gorgonnx.Node)
		if !ok {
			return nil
		}
		n = next
	}
	return nil
}

// decodeError classifies an onnx-go decoding error. onnx-go's errors are plain strings from an internal
// package, so the problems users can fix are recognised by their text.
func decodeError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "FLOAT16"):
		return fmt.Errorf("%w: %v; convert the model with model.float() before exporting", ErrFloat16, err)
	case strings.Contains(msg, "No data found"):
		return fmt.Errorf("%w: a tensor has no data inside the file (%v); load the model with onnx.load (which reads the data files beside it) and save it with onnx.save(model, path, save_as_external_data=False)",
			ErrExternalData, err)
	}
	return fmt.Errorf("%w: %v; is the file complete, and an .onnx model?", ErrNotONNX, err)
}

// stateName matches the tensors of a torchvision ResNet's body, the ones that must fit a ResNet-18.
var stateName = regexp.MustCompile(`^(conv1|bn1|layer[0-9]+)\.`)

// match returns b's State with every tensor but the reduction's taken from named, or the joined problems.
func match(named map[string]tensor.Tensor, b *models.Backbone) ([]safetensors.Tensor, error) {
	if err := checkArchitecture(named, b); err != nil {
		return nil, err
	}
	state := b.State()
	var errs []error
	for i, want := range state {
		if strings.HasPrefix(want.Name, "reduce.") {
			continue
		}
		t, ok := named[want.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: tensor %s is missing; %s", ErrTensor, want.Name, exportFix))
			continue
		}
		if t.Dtype() != tensor.Float32 {
			errs = append(errs, fmt.Errorf("%w: tensor %s is %v, want float32", ErrTensor, want.Name, t.Dtype()))
			continue
		}
		if got := []int(t.Shape()); !slices.Equal(got, want.Shape) {
			err := fmt.Errorf("%w: tensor %s has shape %v, the backbone expects %v%s",
				ErrTensor, want.Name, got, want.Shape, shapeHint(want.Name, got, want.Shape))
			if want.Name == "conv1.weight" { // another stem, width or channels: every later tensor differs too
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		data, ok := t.Data().([]float32)
		if !ok || len(data) != len(want.Data) {
			errs = append(errs, fmt.Errorf("%w: tensor %s holds %d values, want %d", ErrTensor, want.Name, t.DataSize(), len(want.Data)))
			continue
		}
		state[i].Data = slices.Clone(data)
	}
	return state, errors.Join(errs...)
}

// shapeHint says which setting explains a misshapen stem, the first tensor to differ when the backbone and
// the file disagree on channels, width or stem.
func shapeHint(name string, got, want []int) string {
	if name != "conv1.weight" || len(got) != 4 {
		return ""
	}
	switch {
	case got[2] != want[2]:
		return fmt.Sprintf(": the file has a %dx%d stem, the backbone %dx%d", got[2], got[3], want[2], want[3])
	case got[1] != want[1]:
		return fmt.Sprintf(": the file takes %d-channel images; set data.channels to %d", got[1], got[1])
	case got[0] != want[0]:
		return fmt.Sprintf(": the file's ResNet is %d channels wide; set model.width to %d", got[0], got[0])
	}
	return ""
}

// checkArchitecture recognises folded BatchNorm and networks other than ResNet-18 by their tensor names,
// before single tensors are compared, so that such files get one error that says what they are.
func checkArchitecture(named map[string]tensor.Tensor, b *models.Backbone) error {
	want := map[string]bool{}
	for _, t := range b.State() {
		want[t.Name] = true
	}
	var folded, body, extra []string
	for name := range named {
		switch {
		case strings.HasPrefix(name, "onnx::Conv_"):
			folded = append(folded, name)
		case stateName.MatchString(name):
			body = append(body, name)
			if !want[name] && !strings.HasSuffix(name, ".num_batches_tracked") {
				extra = append(extra, name)
			}
		}
	}
	sort.Strings(extra)
	_, hasStats := named["bn1.running_var"]
	switch {
	case !hasStats && len(folded) > 0:
		return fmt.Errorf("%w: the file has no BatchNorm tensors (no bn1.running_var) but %d onnx::Conv_* tensors, so torch.onnx.export folded BatchNorm into the convolutions; %s",
			ErrFoldedBatchNorm, len(folded), exportFix)
	case len(extra) > 0:
		return fmt.Errorf("%w: it has %d tensors a ResNet-18 does not (%s); bicyc imports torchvision's resnet18 only",
			ErrArchitecture, len(extra), strings.Join(extra[:min(3, len(extra))], ", "))
	case len(body) == 0:
		return fmt.Errorf("%w: none of its %d tensors has a ResNet state-dict name (conv1.weight, layer1.0.conv1.weight, ...); %s",
			ErrArchitecture, len(named), exportFix)
	}
	return nil
}
