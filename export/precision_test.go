package export

import (
	"encoding/binary"
	"testing"

	"github.com/bicyc/bicyc/bundle"
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

	f32 := newGraph("fp32")
	x := f32.input("x", elemFloat, batchDim, d)
	f32.op("Gemm", bundle.TensorScores, []string{x, f32.floats("w", []int{k, d}, make([]float32, k*d))}, attrInt("transB", 1))
	f32.output(bundle.TensorScores, elemFloat, batchDim, k)

	f16 := newGraph("fp16")
	x = f16.input("x", elemFloat, batchDim, d)
	xh := f16.op("Cast", "x_half", []string{x}, attrInt("to", int64(elemHalf)))
	y := f16.op("MatMul", "y_half", []string{xh, f16.raw("w", elemHalf, []int{d, k}, half)})
	f16.op("Cast", bundle.TensorScores, []string{y}, attrInt("to", int64(elemFloat)))
	f16.output(bundle.TensorScores, elemFloat, batchDim, k)

	i8 := newGraph("int8")
	x = i8.input("x", elemFloat, batchDim, d)
	q := i8.node("DynamicQuantizeLinear", []string{x}, []string{"xq", "x_scale", "x_zero"})
	acc := i8.op("MatMulInteger", "acc", []string{q[0], i8.raw("w", elemInt8, []int{d, k}, bytes), q[2]})
	accf := i8.op("Cast", "acc_float", []string{acc}, attrInt("to", int64(elemFloat)))
	sc := i8.op("Mul", "scale", []string{q[1], i8.floats("w_scale", []int{k}, scale)})
	i8.op("Mul", bundle.TensorScores, []string{accf, sc})
	i8.output(bundle.TensorScores, elemFloat, batchDim, k)

	in := make([]float32, d)
	for i := range in {
		in[i] = float32(i%7) * 0.1
	}
	for _, g := range []*graph{f32, f16, i8} {
		model, err := marshalModel(g.model(g.name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(g.name, func(b *testing.B) {
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
