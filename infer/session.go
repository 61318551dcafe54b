package infer

import (
	"context"
	"fmt"
	"path/filepath"

	ort "github.com/yalue/onnxruntime_go"
)

// modelSpec is one ONNX model to load and the tensors a session of it
// exchanges: one float32 input and one float32 output, or
// shortlist.onnx's three outputs.
type modelSpec struct {
	path    string // for errors
	onnx    []byte // verified against the manifest (bundle.Bundle.ReadFile)
	inputs  []string
	outputs []string
}

// externalDataKey is ONNX Runtime's session option naming the folder in
// which a model created from bytes finds its external data
// (onnxruntime_session_options_config_keys.h), where it would otherwise
// look beside a model file it was given by path.
const externalDataKey = "session.model_external_initializers_file_folder_path"

// setExternalDataDir points opts at the directory of the models of specs,
// all from one model directory, whose classifier.onnx and model.onnx read
// the class table from bundle.ClassifierDataFile beside them.
func setExternalDataDir(opts *ort.SessionOptions, specs []modelSpec) error {
	if len(specs) == 0 {
		return nil
	}
	dir, err := filepath.Abs(filepath.Dir(specs[0].path))
	if err != nil {
		return fmt.Errorf("%s: %w", specs[0].path, err)
	}
	for _, spec := range specs[1:] {
		if d, _ := filepath.Abs(filepath.Dir(spec.path)); d != dir {
			panic(fmt.Sprintf("infer: models %s and %s are in different directories", specs[0].path, spec.path))
		}
	}
	if err := opts.AddSessionConfigEntry(externalDataKey, dir); err != nil {
		return fmt.Errorf("onnx runtime external data folder %s: %w", dir, err)
	}
	return nil
}

// session is one model loaded into ONNX Runtime. ONNX Runtime's Run is safe
// for concurrent use, and onnxruntime_go's DynamicAdvancedSession keeps no
// per-run state, so a session serves any number of goroutines.
type session struct {
	spec modelSpec
	ort  *ort.DynamicAdvancedSession
}

// run feeds input, a row-major tensor of inShape, and returns the single
// output as a row-major [N, width] slice, N = inShape[0]. See runOutputs.
func (s *session) run(ctx context.Context, input []float32, inShape []int64, width int) ([]float32, error) {
	out, err := s.runOutputs(ctx, input, inShape, width)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// runOutputs feeds input, a row-major tensor of inShape, and returns the
// session's float32 outputs in spec order, output i a row-major
// [N, widths[i]] slice, N = inShape[0]. The output buffers are allocated
// in Go with those shapes, so a model whose output has another shape fails
// here with ONNX Runtime's error instead of being misread. ctx stops the
// run as runValues says.
func (s *session) runOutputs(ctx context.Context, input []float32, inShape []int64, widths ...int) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	in, err := s.newInput(input, inShape)
	if err != nil {
		return nil, err
	}
	defer in.Destroy()
	data := make([][]float32, len(widths))
	outs := make([]ort.Value, len(widths))
	for i, width := range widths {
		var out *ort.Tensor[float32]
		if data[i], out, err = newOutput[float32](s, i, inShape[0], width); err != nil {
			return nil, err
		}
		defer out.Destroy()
		outs[i] = out
	}
	if err := s.runValues(ctx, []ort.Value{in}, outs); err != nil {
		return nil, err
	}
	return data, nil
}

// newInput is the tensor of the session's input, row-major of inShape.
func (s *session) newInput(input []float32, inShape []int64) (*ort.Tensor[float32], error) {
	in, err := ort.NewTensor(ort.Shape(inShape), input)
	if err != nil {
		return nil, fmt.Errorf("%s: input tensor %v: %w", s.spec.path, inShape, err)
	}
	return in, nil
}

// newOutput allocates the buffer of the session's output i, [rows, width]
// row-major, and the tensor over it.
func newOutput[T ort.TensorData](s *session, i int, rows int64, width int) ([]T, *ort.Tensor[T], error) {
	data := make([]T, int(rows)*width)
	t, err := ort.NewTensor(ort.NewShape(rows, int64(width)), data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: output tensor %q: %w", s.spec.path, s.spec.outputs[i], err)
	}
	return data, t, nil
}

// shortlistRun is what a shortlist.onnx session returns for N feature
// rows, row-major: the n shortlisted columns of each row [N, n], their
// exact scores [N, n] and every class's approximate score [N, K].
type shortlistRun struct {
	classes []int64
	exact   []float32
	approx  []float32
}

// runShortlist runs a shortlist.onnx session (bundle.ShortlistFile) on
// features [N, S] for a model of k classes and shortlists of n; ctx stops
// the run as runValues says.
func (s *session) runShortlist(ctx context.Context, features []float32, inShape []int64, n, k int) (shortlistRun, error) {
	if err := ctx.Err(); err != nil {
		return shortlistRun{}, err
	}
	rows := inShape[0]
	in, err := s.newInput(features, inShape)
	if err != nil {
		return shortlistRun{}, err
	}
	defer in.Destroy()
	var r shortlistRun
	var classes *ort.Tensor[int64]
	var exact, approx *ort.Tensor[float32]
	if r.classes, classes, err = newOutput[int64](s, 0, rows, n); err != nil {
		return shortlistRun{}, err
	}
	defer classes.Destroy()
	if r.exact, exact, err = newOutput[float32](s, 1, rows, n); err != nil {
		return shortlistRun{}, err
	}
	defer exact.Destroy()
	if r.approx, approx, err = newOutput[float32](s, 2, rows, k); err != nil {
		return shortlistRun{}, err
	}
	defer approx.Destroy()
	if err := s.runValues(ctx, []ort.Value{in}, []ort.Value{classes, exact, approx}); err != nil {
		return shortlistRun{}, err
	}
	for i, c := range r.classes {
		if c < 0 || c >= int64(k) {
			return shortlistRun{}, fmt.Errorf("%s: shortlisted class column %d of row %d is outside the %d classes", s.spec.path, c, i/n, k)
		}
	}
	return r, nil
}

// runValues runs the session from inputs into outputs, the tensors of
// spec's names in order.
//
// A ctx that can be cancelled gets the run its own ONNX Runtime run
// options, whose terminate flag ctx's cancellation sets (RunOptions.Terminate):
// ONNX Runtime checks it when the run starts and between nodes, so the run
// stops after the node in progress and runValues returns ctx's error. A
// background context costs nothing extra.
func (s *session) runValues(ctx context.Context, inputs, outputs []ort.Value) error {
	var opts *ort.RunOptions
	if ctx.Done() != nil {
		var err error
		if opts, err = ort.NewRunOptions(); err != nil {
			return fmt.Errorf("%s: onnx runtime run options: %w", s.spec.path, err)
		}
		defer opts.Destroy()
		terminated := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			defer close(terminated)
			opts.Terminate() // fails only on uninitialised options
		})
		// opts is destroyed only once no Terminate can still reach it.
		defer func() {
			if !stop() {
				<-terminated
			}
		}()
		runStarting(ctx, terminated)
	}
	if err := s.ort.RunWithOptions(inputs, outputs, opts); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("%s: run stopped: %w", s.spec.path, ctxErr)
		}
		return fmt.Errorf("%s: %w", s.spec.path, err)
	}
	return nil
}

// runStarting is called just before a cancellable run enters ONNX Runtime,
// with the channel closed once ctx's cancellation has set the run's
// terminate flag; tests replace it to cancel at that moment.
var runStarting = func(ctx context.Context, terminated <-chan struct{}) {}

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
