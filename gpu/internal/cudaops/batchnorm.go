package cudaops

import (
	"errors"
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/models/ops"
)

// BatchNorm is bn.Apply(x, gamma, beta, true, false) of models/ops computed by cuDNN: the training-mode
// batch normalisation of a float32 x [N,C,H,W] with its batch statistics, which moves bn's running mean and
// variance (read from bn before each run, written back after), and its gradients with respect to x, gamma
// and beta. Evaluation mode and the fused ReLU are not on the GPU yet: use the CPU op for them.
func BatchNorm(bn *ops.BatchNorm, x, gamma, beta *G.Node) (*G.Node, error) {
	xs := x.Shape()
	switch {
	case xs.Dims() != 4 || x.Dtype() != tensor.Float32:
		return nil, fmt.Errorf("cuda batch norm: input %q is %v %v, want float32 [N,C,H,W]: %w", x.Name(), xs, x.Dtype(), ops.ErrShape)
	case xs[1] != bn.Channels || len(bn.RunningMean) != bn.Channels || len(bn.RunningVar) != bn.Channels:
		return nil, fmt.Errorf("cuda batch norm: input %q has %d channels, layer has %d: %w", x.Name(), xs[1], bn.Channels, ops.ErrShape)
	case xs[0]*xs[2]*xs[3] < 2:
		return nil, fmt.Errorf("cuda batch norm: input %q has shape %v, training needs more than one value per channel: %w", x.Name(), xs, ops.ErrShape)
	}
	for _, p := range []*G.Node{gamma, beta} {
		if ps := p.Shape(); ps.Dims() != 1 || ps[0] != bn.Channels || p.Dtype() != tensor.Float32 {
			return nil, fmt.Errorf("cuda batch norm: parameter %q is %v %v, want [%d] float32: %w", p.Name(), ps, p.Dtype(), bn.Channels, ops.ErrShape)
		}
	}
	s := &bnState{bn: bn, shape: xs.Clone(), serial: serial.Add(1)}
	return G.ApplyOp(&bnOp{s: s, part: "forward"}, x, gamma, beta)
}

// bnState is what the forward op and its gradient ops share: the descriptors and the device copies of x, y,
// γ, β, the running and saved statistics, dy, dx, dγ and dβ.
type bnState struct {
	bn                                                                              *ops.BatchNorm
	shape                                                                           tensor.Shape
	serial                                                                          uint64
	run                                                                             uint64
	d                                                                               *cuda.BatchNorm
	x, y, gamma, beta, runMean, runVar, saveMean, saveInvVar, dy, dx, dgamma, dbeta deviceTensor
}

func (s *bnState) ready() error {
	if s.d != nil {
		return nil
	}
	r, err := cuda.Open()
	if err != nil {
		return err
	}
	d, err := r.NewBatchNorm(s.shape[0], s.shape[1], s.shape[2], s.shape[3])
	if err != nil {
		return err
	}
	vec := tensor.Shape{s.shape[1]}
	for _, t := range []struct {
		d     *deviceTensor
		shape tensor.Shape
	}{{&s.x, s.shape}, {&s.y, s.shape}, {&s.dy, s.shape}, {&s.dx, s.shape}, {&s.gamma, vec}, {&s.beta, vec}, {&s.runMean, vec},
		{&s.runVar, vec}, {&s.saveMean, vec}, {&s.saveInvVar, vec}, {&s.dgamma, vec}, {&s.dbeta, vec}} {
		if err := t.d.alloc(r, tensor.Float32, t.shape); err != nil {
			return err
		}
	}
	s.d = d
	return nil
}

// bnOp is one of the four parts: "forward" (inputs x, γ, β), "dx" (inputs x, γ, y, dy; it also computes dγ
// and dβ), and "dgamma" and "dbeta" (input dx, so that they run after it), which download what "dx" computed.
type bnOp struct {
	s    *bnState
	part string
}

func (op *bnOp) Arity() int {
	switch op.part {
	case "forward":
		return 3
	case "dx":
		return 4
	}
	return 1
}
func (op *bnOp) Type() hm.Type {
	switch op.part {
	case "forward":
		return hm.NewFnType(tensorType(4), tensorType(1), tensorType(1), tensorType(4))
	case "dx":
		return hm.NewFnType(tensorType(4), tensorType(1), tensorType(4), tensorType(4), tensorType(4))
	}
	return hm.NewFnType(tensorType(4), tensorType(1))
}
func (op *bnOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.part == "dgamma" || op.part == "dbeta" {
		return tensor.Shape{op.s.shape[1]}, nil
	}
	return op.s.shape.Clone(), nil
}
func (op *bnOp) ReturnsPtr() bool      { return false }
func (op *bnOp) CallsExtern() bool     { return false }
func (op *bnOp) OverwritesInput() int  { return -1 }
func (op *bnOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *bnOp) Hashcode() uint32      { return hashOf(op) }
func (op *bnOp) String() string        { return fmt.Sprintf("CUDABatchNorm#%d{%s}", op.s.serial, op.part) }
func (op *bnOp) DiffWRT(n int) []bool {
	if op.part == "forward" {
		return []bool{true, true, true}
	}
	return make([]bool, n)
}

func (op *bnOp) SymDiff(in G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.part != "forward" {
		return nil, fmt.Errorf("%v: second derivatives are not implemented", op)
	}
	dx, err := G.ApplyOp(&bnOp{s: op.s, part: "dx"}, in[0], in[1], output, grad)
	if err != nil {
		return nil, err
	}
	dgamma, err := G.ApplyOp(&bnOp{s: op.s, part: "dgamma"}, dx)
	if err != nil {
		return nil, err
	}
	dbeta, err := G.ApplyOp(&bnOp{s: op.s, part: "dbeta"}, dx)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dgamma, dbeta}, nil
}

func (op *bnOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	name := "cuda batch norm " + op.part
	vec := tensor.Shape{s.shape[1]}
	switch op.part {
	case "forward":
		x, err := denseInput(name, 0, vals[0], tensor.Float32, s.shape)
		if err != nil {
			return nil, err
		}
		gamma, err := denseInput(name, 1, vals[1], tensor.Float32, vec)
		if err != nil {
			return nil, err
		}
		beta, err := denseInput(name, 2, vals[2], tensor.Float32, vec)
		if err != nil {
			return nil, err
		}
		if err := s.ready(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		s.run++
		bn := s.bn
		for _, u := range []struct {
			d *deviceTensor
			v *tensor.Dense
		}{{&s.x, x}, {&s.gamma, gamma}, {&s.beta, beta},
			// The running statistics may have been set between runs (a checkpoint loaded): upload them each time.
			{&s.runMean, tensor.New(tensor.WithShape(vec...), tensor.WithBacking(bn.RunningMean))},
			{&s.runVar, tensor.New(tensor.WithShape(vec...), tensor.WithBacking(bn.RunningVar))}} {
			if err := u.d.upload(u.v, s.run); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		if err := s.d.ForwardTraining(s.x.buf, s.y.buf, s.gamma.buf, s.beta.buf, s.runMean.buf, s.runVar.buf,
			s.saveMean.buf, s.saveInvVar.buf, bn.Momentum, bn.Eps); err != nil {
			return nil, err
		}
		if err := cuda.Download(bn.RunningMean, s.runMean.buf); err != nil {
			return nil, err
		}
		if err := cuda.Download(bn.RunningVar, s.runVar.buf); err != nil {
			return nil, err
		}
		return s.y.download(s.shape)
	case "dx":
		dy, err := denseInput(name, 3, vals[3], tensor.Float32, s.shape)
		if err != nil {
			return nil, err
		}
		if s.d == nil {
			return nil, fmt.Errorf("%s: the forward batch norm has not run", name)
		}
		if err := s.dy.upload(dy, s.run); err != nil {
			return nil, fmt.Errorf("%s: dy: %w", name, err)
		}
		if err := s.d.Backward(s.x.buf, s.dy.buf, s.dx.buf, s.gamma.buf, s.dgamma.buf, s.dbeta.buf,
			s.saveMean.buf, s.saveInvVar.buf, s.bn.Eps); err != nil {
			return nil, err
		}
		return s.dx.download(s.shape)
	case "dgamma":
		return s.dgamma.download(vec)
	}
	return s.dbeta.download(vec)
}

func (op *bnOp) release() error {
	s := op.s
	var err error
	if s.d != nil {
		err = s.d.Close()
		s.d = nil
	}
	return errors.Join(err, freeAll(&s.x, &s.y, &s.gamma, &s.beta, &s.runMean, &s.runVar, &s.saveMean, &s.saveInvVar,
		&s.dy, &s.dx, &s.dgamma, &s.dbeta))
}
