// Package compare holds what the side-by-side benchmarks of bicyc against
// PyTorch share (commands bench/infer and bench/train): a Python worker
// process that answers JSON requests, timed runs of whole processes with
// their peak resident memory, medians and percentiles, the machine's load,
// and the printed tables.
//
// It is benchmark tooling, never imported by bicyc itself; PyTorch is
// never a runtime dependency. Nothing here is safe for concurrent use
// unless its doc comment says so.
//
// May import: the standard library only; benchmarks import it.
package compare
