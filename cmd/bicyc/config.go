package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/config"
)

func newConfigCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective configuration or the list of keys",
	}
	cmd.AddCommand(configReader(newConfigShowCmd(g)), newConfigKeysCmd())
	return cmd
}

func newConfigShowCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration (defaults < file < env < flags < --set) as YAML",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(g, cmd.Flags())
			if err != nil {
				return err
			}
			out, err := cfg.YAML()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	addRunFlags(cmd)
	return cmd
}

func newConfigKeysCmd() *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "List every configuration key with its default and meaning",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if markdown {
				_, err := fmt.Fprint(w, config.Markdown())
				return err
			}
			for _, k := range config.Keys() {
				fmt.Fprintf(w, "%-28s %-10s %-14s %s\n", k.Name, k.Type, k.Default, k.Doc)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the table kept in configs/README.md")
	return cmd
}

// addRunFlags adds the flags bound to config keys (see flagKeys).
func addRunFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Int64("seed", 0, "random seed (config key seed)")
	f.String("method", "", "bicyc, adagauss or finetune (config key method)")
	f.String("run-dir", "", "parent directory of run folders (config key run_dir)")
	f.String("name", "", "run folder name (config key run_name)")
	f.Int("threads", 0, "CPU threads, 0 = all (config key threads)")
	f.Bool("quick", false, "quick profile: a subset and few epochs (config key quick)")
	addSkipUnreadableFlag(cmd)
}

// addSkipUnreadableFlag adds --skip-unreadable, the flag of the config key
// data.skip_unreadable.
func addSkipUnreadableFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("skip-unreadable", false, "image folders: train on the images that decode, naming the others in the log (config key data.skip_unreadable)")
}
