package main

import (
	"fmt"
	"strings"

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
		Example:       rootExamples,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return opts.refuseUnused(cmd)
		},
	}
	cmd.PersistentFlags().StringVarP(&opts.configFile, "config", "c", "", "YAML config `file` (see configs/)")
	cmd.PersistentFlags().StringArrayVar(&opts.sets, "set", nil, "override a config key, `key=value` (repeatable)")
	cmd.AddCommand(newConfigCmd(opts))
	cmd.AddCommand(configReader(newTrainCmd(opts)))
	cmd.AddCommand(configReader(newSweepCmd(opts)), newReportCmd())
	cmd.AddCommand(newExportCmd())
	cmd.AddCommand(newEvalCmd())
	cmd.AddCommand(configReader(newLearnCmd(opts)))
	cmd.AddCommand(newConvertDatasetCmd())
	cmd.AddCommand(newDoctorCmd())
	messageFlags().Commands(cmd)
	return cmd
}

// readsConfig is the annotation of the commands that read a configuration
// (--config, --set); on every other one they are an error, never ignored.
const readsConfig = "reads-config"

// configReader marks cmd as one that reads --config and --set.
func configReader(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[readsConfig] = "yes"
	return cmd
}

// refuseUnused refuses --config and --set on a command that reads no
// configuration, naming them.
func (g *globalOptions) refuseUnused(cmd *cobra.Command) error {
	if cmd.Annotations[readsConfig] != "" {
		return nil
	}
	what := cmd.CommandPath() + " reads no configuration"
	if hint := cmd.Annotations[configHint]; hint != "" {
		what += " (" + hint + ")"
	}
	return g.refuse(what, cmd.Flag("config").Changed)
}

// configHint is the annotation that tells, on a command that reads no
// configuration, what it uses instead.
const configHint = "config-hint"

// refuse returns an error naming every --config and --set given, saying
// why (what) they would be ignored, nil when none was.
func (g *globalOptions) refuse(what string, configGiven bool) error {
	var given []string
	if configGiven {
		given = append(given, "--config "+g.configFile)
	}
	for _, s := range g.sets {
		given = append(given, "--set "+s)
	}
	if len(given) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s would be ignored; leave it out", what, strings.Join(given, ", "))
}

// rootExamples are the README's three journeys, as bicyc --help shows them;
// the tests parse every line with the real command tree.
const rootExamples = `  # 1. Train Fashion-MNIST (what 'make train' runs), classify, score a classifier setting
  bicyc train --config configs/fmnist-t5.yaml
  bicyc-infer --model runs/fmnist-t5-bicyc-s0/model imaging/testdata/exif/upright.png
  bicyc eval --run runs/fmnist-t5-bicyc-s0 --split val --shrink 0.5 --test-flip

  # 2. Your photo folders (photos/train/<class>/, photos/test/<class>/) from a pretrained
  #    torchvision ResNet-18 exported to ONNX, then serve the model over HTTP
  bicyc train -c configs/cub200-t10.yaml --name shop \
    --set data.train_dir=photos/train --set data.test_dir=photos/test \
    --set model.pretrained=resnet18.onnx --set stream.tasks=2 \
    --set model.freeze_stages=4 --set train.epochs_first=10 --set train.epochs=10
  bicyc-infer -m runs/shop/model serve --addr :8080

  # 3. Keep teaching: one more task from new image folders alone (no old image)
  bicyc learn --run runs/fmnist-t5-bicyc-s0 --train new/train --test new/test

  # The processor, its vector features and the BLAS kernels training runs on
  bicyc doctor

  # The unknown inbox and classes added without training: bicyc-infer --help.
  # README.md and docs/ (training.md, inference.md, serving.md) tell the rest.`
