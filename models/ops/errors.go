package ops

import "errors"

// ErrShape is wrapped by every error about an input whose rank, sizes or dtype do not fit the op.
var ErrShape = errors.New("bad input shape")

// ErrBadStats is wrapped by the error of an evaluation-mode batch norm whose running statistics are not
// finite or have a negative variance (a corrupt checkpoint, or training that diverged). The error of a
// G.TapeMachine's RunAll has no Unwrap method: find it with errors.As(err, &e) for a variable
// e interface{ Err() error }, then errors.Is(e.Err(), ErrBadStats).
var ErrBadStats = errors.New("bad batch-norm running statistics")
