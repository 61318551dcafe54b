package onnxgraph

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/export/onnxpb"
)

// Format versions of every graph bicyc writes. Debian's onnx 1.12 checker,
// the validator the tests run, accepts IR <= 8 and opset <= 17
// (docs/toolchain.md, "ONNX").
const (
	IRVersion    = 8
	OpsetVersion = 17
)

// BatchDim is the symbolic batch dimension of every graph input and output.
const BatchDim = "N"

// Element types of the tensors bicyc's graphs hold.
const (
	Float = onnxpb.TensorProto_FLOAT
	Int64 = onnxpb.TensorProto_INT64
)

// Graph accumulates one ONNX graph. Value names are global within a graph,
// so every method that creates a value panics on a name that is already
// taken: that is a bug in the caller, never bad outside data.
type Graph struct {
	name    string
	nodes   []*onnxpb.NodeProto
	inits   []*onnxpb.TensorProto
	inputs  []*onnxpb.ValueInfoProto
	outputs []*onnxpb.ValueInfoProto
	taken   map[string]bool
	ops     map[string]int // per-operator count, for readable unique node names
}

// New returns an empty graph called name.
func New(name string) *Graph {
	return &Graph{name: name, taken: map[string]bool{}, ops: map[string]int{}}
}

// Extend returns a graph called name that holds src's inputs,
// initializers and nodes, to add nodes after them; src's outputs are not
// kept: declare the new graph's own with Output.
func Extend(name string, src *onnxpb.GraphProto) *Graph {
	g := New(name)
	g.inputs = src.GetInput()
	g.inits = src.GetInitializer()
	g.nodes = src.GetNode()
	for _, v := range g.inputs {
		g.claim(v.GetName())
	}
	for _, init := range g.inits {
		g.claim(init.GetName())
	}
	for _, n := range g.nodes {
		g.ops[n.GetOpType()]++
		for _, out := range n.GetOutput() {
			g.claim(out)
		}
	}
	return g
}

// Has reports whether the graph has a value called name.
func (g *Graph) Has(name string) bool { return g.taken[name] }

func (g *Graph) claim(name string) {
	if name == "" || g.taken[name] {
		panic(fmt.Sprintf("onnxgraph: graph %s: value name %q empty or used twice", g.name, name))
	}
	g.taken[name] = true
}

// valueInfo describes a tensor whose dimensions are ints (fixed) or strings
// (symbolic, such as the batch dimension "N").
func valueInfo(name string, elem onnxpb.TensorProto_DataType, dims ...any) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		var dim onnxpb.TensorShapeProto_Dimension
		switch v := d.(type) {
		case int:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}
		case string:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: v}
		default:
			panic(fmt.Sprintf("onnxgraph: dimension %v of %q is %T, want int or string", d, name, d))
		}
		shape.Dim = append(shape.Dim, &dim)
	}
	return &onnxpb.ValueInfoProto{
		Name: proto.String(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(elem)),
			Shape:    shape,
		}}},
	}
}

// Input declares a graph input and returns its name.
func (g *Graph) Input(name string, elem onnxpb.TensorProto_DataType, dims ...any) string {
	g.claim(name)
	g.inputs = append(g.inputs, valueInfo(name, elem, dims...))
	return name
}

// Output declares an existing value as a graph output.
func (g *Graph) Output(name string, elem onnxpb.TensorProto_DataType, dims ...any) {
	if !g.taken[name] {
		panic(fmt.Sprintf("onnxgraph: graph %s: output %q is not a value of the graph", g.name, name))
	}
	g.outputs = append(g.outputs, valueInfo(name, elem, dims...))
}

// Floats adds a float32 initializer stored as little-endian raw_data.
func (g *Graph) Floats(name string, shape []int, data []float32) string {
	if n := NumElements(shape); n != len(data) {
		panic(fmt.Sprintf("onnxgraph: initializer %q has shape %v but %d values", name, shape, len(data)))
	}
	g.claim(name)
	g.inits = append(g.inits, &onnxpb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(Float)),
		Dims: int64s(shape), RawData: Float32Bytes(data),
	})
	return name
}

// External adds a float32 initializer whose values are the first length
// bytes of the file location beside the model (ONNX external data), raw
// Raw adds an initializer of element type elem whose little-endian
// raw_data is data (int8 and float16 tables, which Floats cannot hold).
func (g *Graph) Raw(name string, elem onnxpb.TensorProto_DataType, shape []int, data []byte) string {
	g.claim(name)
	g.inits = append(g.inits, &onnxpb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(elem)), Dims: int64s(shape), RawData: data,
	})
	return name
}

// little-endian as Float32Bytes writes them.
func (g *Graph) External(name string, shape []int, location string, length int64) string {
	if int64(4*NumElements(shape)) != length {
		panic(fmt.Sprintf("onnxgraph: external initializer %q has shape %v but %d bytes", name, shape, length))
	}
	g.claim(name)
	entry := func(k, v string) *onnxpb.StringStringEntryProto {
		return &onnxpb.StringStringEntryProto{Key: proto.String(k), Value: proto.String(v)}
	}
	g.inits = append(g.inits, &onnxpb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(Float)), Dims: int64s(shape),
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{
			entry("location", location), entry("offset", "0"), entry("length", fmt.Sprint(length))},
	})
	return name
}

// Float32Bytes returns data as little-endian raw bytes, ONNX's raw_data
// layout.
func Float32Bytes(data []float32) []byte {
	raw := make([]byte, 0, 4*len(data))
	for _, v := range data {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	return raw
}

// Ints adds an int64 initializer (shapes, axes, counts).
func (g *Graph) Ints(name string, shape []int, data ...int64) string {
	if n := NumElements(shape); n != len(data) {
		panic(fmt.Sprintf("onnxgraph: initializer %q has shape %v but %d values", name, shape, len(data)))
	}
	g.claim(name)
	g.inits = append(g.inits, &onnxpb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(Int64)),
		Dims: int64s(shape), Int64Data: append([]int64(nil), data...),
	})
	return name
}

// Node adds an operator with explicit output names and returns them.
func (g *Graph) Node(op string, inputs, outputs []string, attrs ...*onnxpb.AttributeProto) []string {
	for _, in := range inputs {
		if !g.taken[in] {
			panic(fmt.Sprintf("onnxgraph: graph %s: %s input %q is not defined yet", g.name, op, in))
		}
	}
	for _, out := range outputs {
		g.claim(out)
	}
	g.ops[op]++
	g.nodes = append(g.nodes, &onnxpb.NodeProto{
		Name:      proto.String(fmt.Sprintf("%s_%d", op, g.ops[op])),
		OpType:    proto.String(op),
		Input:     append([]string(nil), inputs...),
		Output:    append([]string(nil), outputs...),
		Attribute: attrs,
	})
	return outputs
}

// Op adds a single-output operator whose output is called out.
func (g *Graph) Op(op, out string, inputs []string, attrs ...*onnxpb.AttributeProto) string {
	return g.Node(op, inputs, []string{out}, attrs...)[0]
}

// Model wraps the graph in a ModelProto of IRVersion and OpsetVersion.
func (g *Graph) Model(doc string) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{
		IrVersion:    proto.Int64(IRVersion),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(OpsetVersion)}},
		ProducerName: proto.String("bicyc"),
		DocString:    proto.String(doc),
		Graph: &onnxpb.GraphProto{
			Name:        proto.String(g.name),
			Node:        g.nodes,
			Initializer: g.inits,
			Input:       g.inputs,
			Output:      g.outputs,
		},
	}
}

// Marshal encodes m deterministically, so the same weights always give
// the same bytes and the same SHA-256 in the bundle manifest.
func Marshal(m *onnxpb.ModelProto) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("onnxgraph: encode onnx model %s: %w", m.GetGraph().GetName(), err)
	}
	return b, nil
}

// AttrInts is an INTS attribute.
func AttrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

// AttrInt is an INT attribute.
func AttrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

// NumElements is the product of shape.
func NumElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// Describe returns the signature of a serialized model, the first thing a reader checks in a graph: a line
// per input and output with its shape (named dimensions by name), then the IR and opset versions and the
// operators in order.
func Describe(model []byte) (string, error) {
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(model, &m); err != nil {
		return "", fmt.Errorf("onnxgraph: reading the model: %w", err)
	}
	shape := func(v *onnxpb.ValueInfoProto) string {
		var dims []string
		for _, d := range v.GetType().GetTensorType().GetShape().GetDim() {
			if d.GetDimParam() != "" {
				dims = append(dims, d.GetDimParam())
			} else {
				dims = append(dims, fmt.Sprint(d.GetDimValue()))
			}
		}
		return v.GetName() + "[" + strings.Join(dims, ",") + "]"
	}
	var b strings.Builder
	for _, v := range m.GetGraph().GetInput() {
		fmt.Fprintln(&b, "input ", shape(v))
	}
	for _, v := range m.GetGraph().GetOutput() {
		fmt.Fprintln(&b, "output", shape(v))
	}
	var ops []string
	for _, n := range m.GetGraph().GetNode() {
		ops = append(ops, n.GetOpType())
	}
	var opset int64
	if len(m.GetOpsetImport()) > 0 {
		opset = m.GetOpsetImport()[0].GetVersion()
	}
	fmt.Fprintf(&b, "ir %d, opset %d: %s\n", m.GetIrVersion(), opset, strings.Join(ops, " "))
	return b.String(), nil
}
