package infer

import (
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
)

// modelSpec is one ONNX model to load and the tensors a session of it
// exchanges: one float32 input and one float32 output.
type modelSpec struct {
	path    string // for errors
	onnx    []byte // verified against the manifest (bundle.Bundle.ReadFile)
	inputs  []string
	outputs []string
}

// session is one model loaded into ONNX Runtime. ONNX Runtime's Run is safe
// for concurrent use, and onnxruntime_go's DynamicAdvancedSession keeps no
// per-run state, so a session serves any number of goroutines.
type session struct {
	spec modelSpec
	ort  *ort.DynamicAdvancedSession
}

// run feeds input, a row-major tensor of inShape, and returns the single
// output as a row-major [N, width] slice, N = inShape[0]. The output buffer
// is allocated in Go with that shape, so a model whose output has another
// shape fails here with ONNX Runtime's error instead of being misread.
func (s *session) run(input []float32, inShape []int64, width int) ([]float32, error) {
	in, err := ort.NewTensor(ort.Shape(inShape), input)
	if err != nil {
		return nil, fmt.Errorf("%s: input tensor %v: %w", s.spec.path, inShape, err)
	}
	defer in.Destroy()
	data := make([]float32, int(inShape[0])*width)
	out, err := ort.NewTensor(ort.NewShape(inShape[0], int64(width)), data)
	if err != nil {
		return nil, fmt.Errorf("%s: output tensor %q: %w", s.spec.path, s.spec.outputs[0], err)
	}
	defer out.Destroy()
	if err := s.ort.Run([]ort.Value{in}, []ort.Value{out}); err != nil {
		return nil, fmt.Errorf("%s: %w", s.spec.path, err)
	}
	return data, nil
}

// destroy releases the session; it accepts nil and a destroyed session.
func (s *session) destroy() {
	if s != nil && s.ort != nil {
		s.ort.Destroy()
		s.ort = nil
	}
}

func destroyAll(sessions []*session) {
	for _, s := range sessions {
		s.destroy()
	}
}
