package cudaops

import (
	"errors"

	G "gorgonia.org/gorgonia"
)

// Release frees the device memory and cuDNN descriptors held by the GPU ops of g, which must not run again.
// Ops keep them from their first run on, for the graph's life: call Release when a graph is dropped (a
// training program builds new graphs for each task), or the memory stays taken until the process ends. It is
// safe on a graph that never ran and on one already released.
func Release(g *G.ExprGraph) error {
	var errs []error
	for _, n := range g.AllNodes() {
		if r, ok := n.Op().(interface{ release() error }); ok {
			errs = append(errs, r.release())
		}
	}
	return errors.Join(errs...)
}

// free releases the device buffer; the host tensor stays for values already returned.
func (d *deviceTensor) free() error {
	err := d.buf.Free()
	d.buf, d.src = nil, nil
	return err
}

func freeAll(ds ...*deviceTensor) error {
	var errs []error
	for _, d := range ds {
		errs = append(errs, d.free())
	}
	return errors.Join(errs...)
}

func (op *convOp) release() error {
	s := op.s
	var err error
	if s.conv != nil {
		err = s.conv.Close()
		s.conv = nil
	}
	return errors.Join(err, freeAll(&s.x, &s.w, &s.y, &s.dy, &s.dx, &s.dw))
}

func (op *gemmOp) release() error {
	s := op.s
	s.r = nil
	return freeAll(&s.a, &s.b, &s.c, &s.dc, &s.da, &s.db)
}

func (op *poolOp) release() error {
	s := op.s
	var err error
	if s.pool != nil {
		err = s.pool.Close()
		s.pool = nil
	}
	return errors.Join(err, freeAll(&s.x, &s.y, &s.dy, &s.dx))
}

func (op *unaryOp) release() error {
	s := op.s
	s.fwd, s.bwd = nil, nil // the compiled kernels are shared by the process (compiled)
	return freeAll(&s.x, &s.y, &s.dy, &s.dx)
}
