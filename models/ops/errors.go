package ops

import "errors"

// ErrShape is wrapped by every error about an input whose rank, sizes or dtype do not fit the op.
var ErrShape = errors.New("bad input shape")
