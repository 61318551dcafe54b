package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/data"
)

func newConvertDatasetCmd() *cobra.Command {
	var layout string
	cmd := &cobra.Command{
		Use:   "convert-dataset --layout <tinyimagenet|cub200> <src> <dst>",
		Short: "Rewrite TinyImageNet or CUB-200-2011 into the train/ test/ class-folder layout",
		Long: `convert-dataset reads a dataset in its distributed layout and writes dst/train/<class>/ and
dst/test/<class>/, the image-folder layout data.kind: imagefolder reads (docs/datasets.md):

  tinyimagenet  tiny-imagenet-200/: train/<wnid>/images/, and val/images/ labelled by
                val/val_annotations.txt (val becomes test/)
  cub200        CUB_200_2011/: images/<class>/, split by images.txt and train_test_split.txt

Images are hard-linked where possible (copied across file systems); src is not modified.
dst must be empty or absent.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			train, test, err := data.ConvertLayout(layout, args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d training and %d test images in %s/train and %s/test\n", layout, train, test, args[1], args[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&layout, "layout", "", "layout of <src>: tinyimagenet or cub200 (required)")
	cmd.MarkFlagRequired("layout")
	return cmd
}
