// Command bicyc trains, evaluates, extends and exports exemplar-free
// class-incremental classifiers (BiCyc, ICLR 2026). Run `bicyc --help`.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "bicyc:", err)
		os.Exit(1)
	}
}
