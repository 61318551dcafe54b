package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bicyc/bicyc/config"
)

// TestMessageFlagsNameRealFlags: every flag that messageFlags puts into a
// library's error is a flag of some bicyc command.
func TestMessageFlagsNameRealFlags(t *testing.T) {
	flags := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	for name, says := range messageFlags() {
		for _, m := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(says, -1) {
			if !flags[m[1]] {
				t.Errorf("%s -> %q: no command has --%s", name, says, m[1])
			}
		}
	}
}

// TestMessageFlagsMapConfigError: the run-name error of package config,
// which names the setting run_name, names --name as bicyc prints it.
func TestMessageFlagsMapConfigError(t *testing.T) {
	c := config.Default()
	_, err := c.RunFolder("bad/name")
	if err == nil {
		t.Fatal("a run named after the config file \"bad/name\" was accepted")
	}
	if strings.Contains(err.Error(), "--name") {
		t.Fatalf("package config names a flag: %v", err)
	}
	if got := messageFlags().Error(err).Error(); !strings.Contains(got, "set run_name or --name") {
		t.Errorf("bicyc prints %q, want it to name --name", got)
	}
}
