package main

import (
	"io"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/docs"
)

// TestDocumentedCommandsParse dry-runs every documented bicyc-infer command
// (the ```sh lines of README.md and the pages of docs/, and the examples of
// bicyc-infer --help): the command tree must know the sub-command, its flags
// and its arguments. Nothing is opened or served.
func TestDocumentedCommandsParse(t *testing.T) {
	t.Chdir("../..")
	invocations, err := docs.Documented(".", "bicyc-infer", rootExamples)
	if err != nil {
		t.Fatal(err)
	}
	for i, args := range invocations {
		line := "bicyc-infer " + strings.Join(args, " ")
		root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
		c, rest, err := root.Find(args)
		if err == nil {
			err = c.ParseFlags(rest)
		}
		if err == nil {
			err = c.ValidateArgs(c.Flags().Args())
		}
		if err != nil {
			t.Errorf("case %d: %s: %v", i, line, err)
		}
	}
	if len(invocations) < 10 {
		t.Errorf("only %d documented commands: are README.md and docs/ where the test looks?", len(invocations))
	}
}
