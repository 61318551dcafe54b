package cudaops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/models/ops"
)

// MatMul returns the matrix product a·b of a [M,K] and b [K,N], [M,N], computed by cuBLAS, with both
// gradients:
//
//	da = dc · bᵀ,  db = aᵀ · dc
//
// Shape and dtype errors wrap ops.ErrShape; they are found here, without a GPU.
func MatMul(a, b *G.Node) (*G.Node, error) {
	as, bs := a.Shape(), b.Shape()
	switch {
	case as.Dims() != 2 || bs.Dims() != 2:
		return nil, fmt.Errorf("cuda matmul: %q %v and %q %v must be matrices: %w", a.Name(), as, b.Name(), bs, ops.ErrShape)
	case as[1] != bs[0]:
		return nil, fmt.Errorf("cuda matmul: %q %v and %q %v do not chain: %w", a.Name(), as, b.Name(), bs, ops.ErrShape)
	case a.Dtype() != b.Dtype() || (a.Dtype() != tensor.Float32 && a.Dtype() != tensor.Float64):
		return nil, fmt.Errorf("cuda matmul: %q is %v, %q is %v, want both float32 or both float64: %w", a.Name(), a.Dtype(), b.Name(), b.Dtype(), ops.ErrShape)
	case as.TotalSize() == 0 || bs.TotalSize() == 0:
		return nil, fmt.Errorf("cuda matmul: %v or %v is empty: %w", as, bs, ops.ErrShape)
	}
	s := &gemmState{m: as[0], k: as[1], n: bs[1], dt: a.Dtype(), serial: serial.Add(1)}
	return G.ApplyOp(&gemmOp{s: s, which: "forward"}, a, b)
}

// gemmState is what the product and its two gradient ops share: the device copies of a, b, c = a·b, dc,
// da and db. The gradient ops use the a and b the forward op uploaded in the same run.
type gemmState struct {
	m, k, n             int
	dt                  tensor.Dtype
	serial              uint64
	run                 uint64
	r                   *cuda.Runtime
	a, b, c, dc, da, db deviceTensor
}

func (s *gemmState) ready() error {
	if s.r != nil {
		return nil
	}
	r, err := cuda.Open()
	if err != nil {
		return err
	}
	for _, t := range []struct {
		d          *deviceTensor
		rows, cols int
	}{{&s.a, s.m, s.k}, {&s.b, s.k, s.n}, {&s.c, s.m, s.n}, {&s.dc, s.m, s.n}, {&s.da, s.m, s.k}, {&s.db, s.k, s.n}} {
		if err := t.d.alloc(r, s.dt, tensor.Shape{t.rows, t.cols}); err != nil {
			return err
		}
	}
	s.r = r
	return nil
}

// gemmOp is one of the three products: "forward" c = a·b (inputs a, b), "a" da = dc·bᵀ (inputs b, dc) and
// "b" db = aᵀ·dc (inputs a, dc).
type gemmOp struct {
	s     *gemmState
	which string
}

func (op *gemmOp) Arity() int { return 2 }
func (op *gemmOp) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(2))
}
func (op *gemmOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.outShape(), nil }
func (op *gemmOp) ReturnsPtr() bool                               { return false }
func (op *gemmOp) CallsExtern() bool                              { return false }
func (op *gemmOp) OverwritesInput() int                           { return -1 }
func (op *gemmOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op *gemmOp) Hashcode() uint32                               { return hashOf(op) }
func (op *gemmOp) String() string {
	return fmt.Sprintf("CUDAMatMul#%d{%dx%dx%d,%s}", op.s.serial, op.s.m, op.s.k, op.s.n, op.which)
}
func (op *gemmOp) DiffWRT(int) []bool { return []bool{true, true} }

func (op *gemmOp) outShape() tensor.Shape {
	s := op.s
	switch op.which {
	case "a":
		return tensor.Shape{s.m, s.k}
	case "b":
		return tensor.Shape{s.k, s.n}
	}
	return tensor.Shape{s.m, s.n}
}

func (op *gemmOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.which != "forward" {
		return nil, fmt.Errorf("%v: second derivatives are not implemented", op)
	}
	da, err := G.ApplyOp(&gemmOp{s: op.s, which: "a"}, in[1], grad)
	if err != nil {
		return nil, err
	}
	db, err := G.ApplyOp(&gemmOp{s: op.s, which: "b"}, in[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{da, db}, nil
}

func (op *gemmOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	name := "cuda matmul"
	if op.which != "forward" {
		name = "cuda matmul gradient of " + op.which
	}
	shapes := map[string][2]tensor.Shape{
		"forward": {{s.m, s.k}, {s.k, s.n}},
		"a":       {{s.k, s.n}, {s.m, s.n}},
		"b":       {{s.m, s.k}, {s.m, s.n}},
	}[op.which]
	in0, err := denseInput(name, 0, vals[0], s.dt, shapes[0])
	if err != nil {
		return nil, err
	}
	in1, err := denseInput(name, 1, vals[1], s.dt, shapes[1])
	if err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	elem := elemSize(s.dt)
	switch op.which {
	case "forward":
		s.run++
		if err := s.a.upload(in0, s.run); err != nil {
			return nil, fmt.Errorf("%s: a: %w", name, err)
		}
		if err := s.b.upload(in1, s.run); err != nil {
			return nil, fmt.Errorf("%s: b: %w", name, err)
		}
		if err := s.r.Gemm(elem, false, false, s.m, s.n, s.k, s.a.buf, s.b.buf, s.c.buf); err != nil {
			return nil, err
		}
		return s.c.download(op.outShape())
	case "a": // da [m,k] = dc [m,n] · bᵀ
		if err := s.dc.upload(in1, s.run); err != nil {
			return nil, fmt.Errorf("%s: dc: %w", name, err)
		}
		if err := s.r.Gemm(elem, false, true, s.m, s.k, s.n, s.dc.buf, s.b.buf, s.da.buf); err != nil {
			return nil, err
		}
		return s.da.download(op.outShape())
	default: // db [k,n] = aᵀ · dc [m,n]
		if err := s.dc.upload(in1, s.run); err != nil {
			return nil, fmt.Errorf("%s: dc: %w", name, err)
		}
		if err := s.r.Gemm(elem, true, false, s.k, s.n, s.m, s.a.buf, s.dc.buf, s.db.buf); err != nil {
			return nil, err
		}
		return s.db.download(op.outShape())
	}
}
