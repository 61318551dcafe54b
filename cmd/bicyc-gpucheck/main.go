// Command bicyc-gpucheck is `bicyc doctor --gpu` as a small binary for machines that have a GPU but no Go:
// it loads CUDA at run time, runs a few layers' forward pass and gradients on the GPU and on the CPU from
// the same weights and batch, and prints the comparison as JSON (docs/gpu.md, "Checking training on a lent
// GPU"). Built with CGO_ENABLED=0 it needs only the C library, and its CPU side multiplies with gonum's
// pure-Go BLAS (several times slower than bicyc's training); built with cgo its CPU side runs on OpenBLAS
// as bicyc trains, and it needs libopenblas.so.0 (scripts/gpu/pack-train.sh carries it).
//
//	bicyc-gpucheck [--runs 3] [--max-rel-diff 1e-4] [--small] [--cases NAME,...] [--list]
//
// The exit status is 0 when every layer ran on both devices within --max-rel-diff, 1 otherwise.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/gpu"
)

func main() {
	blas := useBLAS()
	runs := flag.Int("runs", 3, "timed steps per layer and device, after one untimed step")
	maxRel := flag.Float64("max-rel-diff", 1e-4, "largest relative difference accepted")
	small := flag.Bool("small", false, "small layers only (seconds, for a first try)")
	names := flag.String("cases", "", "comma-separated names of the cases to run (see --list); all of the set if empty")
	list := flag.Bool("list", false, "print the case names of the set and exit")
	flag.Parse()
	opt := gpu.CheckOptions{Runs: *runs, Tolerance: *maxRel, Progress: os.Stderr, Cases: gpu.DefaultCheckCases}
	if *small {
		opt.Cases = smallCases
	}
	if *list {
		for _, c := range opt.Cases {
			fmt.Println(c.Name)
		}
		return
	}
	if *names != "" {
		var picked []gpu.CheckCase
		for _, name := range strings.Split(*names, ",") {
			i := slices.IndexFunc(opt.Cases, func(c gpu.CheckCase) bool { return c.Name == name })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "bicyc-gpucheck: no case %q (see --list)\n", name)
				os.Exit(2)
			}
			picked = append(picked, opt.Cases[i])
		}
		opt.Cases = picked
	}
	rep := gpu.Check(opt)
	rep.CPUBLAS = fmt.Sprintf("%s, GOMAXPROCS %d", blas, runtime.GOMAXPROCS(0))
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, "bicyc-gpucheck:", err)
		os.Exit(1)
	}
	if !rep.OK {
		os.Exit(1)
	}
}

// smallCases run in seconds on any machine: the first try of each kind of CUDA call.
var smallCases = []gpu.CheckCase{
	{Name: "small-conv3x3", X: []int{8, 16, 14, 14}, W: []int{32, 16, 3, 3}, Stride: 1, Pad: 1},
	{Name: "small-conv7x7s2", X: []int{4, 3, 32, 32}, W: []int{16, 3, 7, 7}, Stride: 2, Pad: 3},
	{Name: "small-matmul", A: []int{16, 64}, B: []int{64, 10}},
	{Name: "small-relu-nvrtc", X: []int{8, 16, 14, 14}, Func: "relu"},
	{Name: "small-gelu-nvrtc", X: []int{16, 64}, Func: "gelu"},
	{Name: "small-maxpool-3x3s2", X: []int{4, 8, 17, 17}, Pool: 3, Stride: 2, Pad: 1},
	{Name: "small-batchnorm", X: []int{8, 16, 7, 7}, Norm: true},
	{Name: "small-batchnorm-eval-relu-nvrtc", X: []int{8, 16, 7, 7}, Norm: true, Eval: true, ReLU: true},
	{Name: "small-bias-nvrtc", X: []int{8, 16, 7, 7}, Func: "bias"},
	{Name: "small-crossentropy-nvrtc", X: []int{16, 10}, Func: "crossentropy"},
	{Name: "small-mse-nvrtc", X: []int{16, 64}, Func: "mse"},
	{Name: "small-avgpool-nvrtc", X: []int{8, 16, 7, 7}, Func: "avgpool"},
	{Name: "small-sgd-nvrtc", SGD: []int{1, 257, 10007}},
}
