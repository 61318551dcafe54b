package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTrainCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "train [--config <file>] [--resume <run-dir>]",
		Short: "Run a task stream: Stage I, Stage II, transport and evaluation after every task",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(g, cmd.Flags())
			if err != nil {
				return err
			}
			return fmt.Errorf("training engine not built yet (config ok: %s)", cfg.Method)
		},
	}
	addRunFlags(cmd)
	return cmd
}
