// Command bicyc-infer classifies images with a model directory exported by
// bicyc, through ONNX Runtime, from the command line or as an HTTP service.
// Run `bicyc-infer --help`. It never links the training engine.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd(os.Stdin, os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "bicyc-infer:", err)
		os.Exit(1)
	}
}
