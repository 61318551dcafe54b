package main

import (
	"github.com/spf13/cobra"
)

// globalOptions are the flags every command shares.
type globalOptions struct {
	configFile string
	sets       []string
}

func newRootCmd() *cobra.Command {
	opts := &globalOptions{}
	cmd := &cobra.Command{
		Use:   "bicyc",
		Short: "Exemplar-free class-incremental learning with Gaussian prototypes and a cycle-consistent adapter",
		Long: `bicyc keeps teaching an image classifier new classes, task after task, without keeping old
images: each class is a Gaussian prototype, and a bidirectional, cycle-consistent adapter carries
old prototypes into every new feature space (BiCyc, ICLR 2026). Models export to ONNX.

Configuration: --config FILE (YAML, see configs/), BICYC_* environment variables, flags and
--set key=value, in increasing precedence. 'bicyc config keys' lists every key.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.PersistentFlags().StringVarP(&opts.configFile, "config", "c", "", "YAML config `file` (see configs/)")
	cmd.PersistentFlags().StringArrayVar(&opts.sets, "set", nil, "override a config key, `key=value` (repeatable)")
	cmd.AddCommand(newConfigCmd(opts))
	cmd.AddCommand(newTrainCmd(opts))
	cmd.AddCommand(newSweepCmd(opts), newReportCmd())
	cmd.AddCommand(newExportCmd())
	cmd.AddCommand(newEvalCmd())
	cmd.AddCommand(newLearnCmd(opts))
	cmd.AddCommand(newConvertDatasetCmd())
	cmd.AddCommand(newDoctorCmd())
	return cmd
}
