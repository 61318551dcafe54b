package export

import (
	"encoding/binary"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/export/onnxpb"
	"github.com/bicyc/bicyc/gauss"
)

// BenchmarkTablePrecision measures what a batch-1 answer costs in ONNX
// Runtime's CPU provider when the expanded class table ([K, D], 5000
// classes, S = 64) is stored in float32 (Gemm), float16 (Cast, MatMul in
// float16, Cast) or int8 (DynamicQuantizeLinear, MatMulInteger, per-class
// scale): at batch 1 the table is read once per image, so a smaller table
// is faster only if the runtime multiplies it as stored instead of
// converting it on every call (docs/classes.md, "Approximations").
//
//	go test ./export -run '^$' -bench TablePrecision -benchtime 200x
func BenchmarkTablePrecision(b *testing.B) {
	const k, s = 5000, 64
	d := gauss.QuadraticDim(s)
	elemHalf, elemInt8 := onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_INT8
	half := make([]byte, 2*k*d)
	for i := 0; i < len(half); i += 2 {
		binary.LittleEndian.PutUint16(half[i:], 0x3c00+uint16(i%512)) // 1.0 and up
	}
	bytes := make([]byte, k*d)
	for i := range bytes {
		bytes[i] = byte(i % 61)
	}
	scale := make([]float32, k)
	for i := range scale {
		scale[i] = 1e-3
	}

	f32 := onnxgraph.New("fp32")
	x := f32.Input("x", onnxgraph.Float, onnxgraph.BatchDim, d)
	f32.Op("Gemm", bundle.TensorScores, []string{x, f32.Floats("w", []int{k, d}, make([]float32, k*d))}, onnxgraph.AttrInt("transB", 1))
	f32.Output(bundle.TensorScores, onnxgraph.Float, onnxgraph.BatchDim, k)

	f16 := onnxgraph.New("fp16")
	x = f16.Input("x", onnxgraph.Float, onnxgraph.BatchDim, d)
	xh := f16.Op("Cast", "x_half", []string{x}, onnxgraph.AttrInt("to", int64(elemHalf)))
	y := f16.Op("MatMul", "y_half", []string{xh, f16.Raw("w", elemHalf, []int{d, k}, half)})
	f16.Op("Cast", bundle.TensorScores, []string{y}, onnxgraph.AttrInt("to", int64(onnxgraph.Float)))
	f16.Output(bundle.TensorScores, onnxgraph.Float, onnxgraph.BatchDim, k)

	i8 := onnxgraph.New("int8")
	x = i8.Input("x", onnxgraph.Float, onnxgraph.BatchDim, d)
	q := i8.Node("DynamicQuantizeLinear", []string{x}, []string{"xq", "x_scale", "x_zero"})
	acc := i8.Op("MatMulInteger", "acc", []string{q[0], i8.Raw("w", elemInt8, []int{d, k}, bytes), q[2]})
	accf := i8.Op("Cast", "acc_float", []string{acc}, onnxgraph.AttrInt("to", int64(onnxgraph.Float)))
	sc := i8.Op("Mul", "scale", []string{q[1], i8.Floats("w_scale", []int{k}, scale)})
	i8.Op("Mul", bundle.TensorScores, []string{accf, sc})
	i8.Output(bundle.TensorScores, onnxgraph.Float, onnxgraph.BatchDim, k)

	in := make([]float32, d)
	for i := range in {
		in[i] = float32(i%7) * 0.1
	}
	for _, tc := range []struct {
		name string
		g    *onnxgraph.Graph
	}{{"fp32", f32}, {"fp16", f16}, {"int8", i8}} {
		name, g := tc.name, tc.g
		model, err := onnxgraph.Marshal(g.Model(name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			sess := newBenchSession(b, model, "x")
			defer sess.close()
			sess.run(b, in, 1, d, k)
			b.ResetTimer()
			cpu := cpuSeconds(b)
			for b.Loop() {
				sess.run(b, in, 1, d, k)
			}
			cpu = cpuSeconds(b) - cpu
			b.ReportMetric(cpu/float64(b.N)*1e6, "cpu-us/op")
			b.ReportMetric(float64(k*d)*float64(b.N)/cpu/1e9, "Gvalues/cpu-s")
		})
	}
}
