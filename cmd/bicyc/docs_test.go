package main

import (
	"strings"
	"testing"

	"github.com/bicyc/bicyc/docs"
)

// TestDocumentedCommandsParse dry-runs every documented bicyc command: the
// command tree must know the sub-command, its flags and its arguments, and
// a train command's configuration (file, flags and --set keys) must load
// and validate. Nothing is trained.
func TestDocumentedCommandsParse(t *testing.T) {
	t.Chdir("../..") // the commands' paths (configs/...) are the repository's
	invocations, err := docs.Documented(".", "bicyc", rootExamples)
	if err != nil {
		t.Fatal(err)
	}
	trains := 0
	for i, args := range invocations {
		line := "bicyc " + strings.Join(args, " ")
		root := newRootCmd()
		c, rest, err := root.Find(args)
		if err != nil {
			t.Errorf("case %d: %s: %v", i, line, err)
			continue
		}
		if err := c.ParseFlags(rest); err != nil {
			t.Errorf("case %d: %s: %v", i, line, err)
			continue
		}
		if err := c.ValidateArgs(c.Flags().Args()); err != nil {
			t.Errorf("case %d: %s: %v", i, line, err)
			continue
		}
		if c.Name() != "train" || c.Flags().Changed("resume") || c.Flags().Changed("fork") {
			continue
		}
		file, _ := c.Flags().GetString("config")
		sets, _ := c.Flags().GetStringArray("set")
		if _, err := loadConfig(&globalOptions{configFile: file, sets: sets}, c.Flags()); err != nil {
			t.Errorf("case %d: %s: %v", i, line, err)
		}
		trains++
	}
	if len(invocations) < 20 || trains < 4 {
		t.Errorf("%d documented commands, %d train commands loaded: are README.md and docs/ where the test looks?", len(invocations), trains)
	}
}
