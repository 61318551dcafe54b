package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/lockfile"

	"github.com/bicyc/bicyc/repository"
)

// addClassesOptions are the add-classes command's flags.
type addClassesOptions struct {
	model *modelOptions
	from  string
	out   string
	skip  bool
	// nextVersion: out is a repository model, DIR/<name>; write its next
	// version there (repository.CreateNextVersion), holding its lock.
	nextVersion bool
	// wait is how long to wait for the repository model's lock.
	wait time.Duration
}

// lockRepository takes the lock of the repository model that out is a
// version of (repository.VersionOf), for command, waiting up to wait; a nil
// lock when out is not a version. Release it when the version is written.
func lockRepository(ctx context.Context, command, modelDir string, wait time.Duration, stderr io.Writer) (*lockfile.Lock, error) {
	if err := os.MkdirAll(modelDir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", command, err)
	}
	lock, _, took, err := lockfile.Acquire(ctx, filepath.Join(modelDir, repository.LockFile), lockfile.Options{Wait: wait, Waiting: func(h lockfile.Owner) {
		fmt.Fprintf(stderr, "bicyc-infer: %s: waiting up to %s for %s: %s writes it\n", command, wait, modelDir, h)
	}})
	if err != nil {
		return nil, fmt.Errorf("%s: repository model %s: %w (--wait <duration> waits for it)", command, modelDir, err)
	}
	if took != "" {
		fmt.Fprintf(stderr, "bicyc-infer: %s: %s: %s\n", command, modelDir, took)
	}
	return lock, nil
}

// asRepositoryWriter runs write, which creates the model directory out,
// holding the lock of the repository model out is a version of
// (repository.VersionOf), waiting up to wait for it; any other out needs no
// lock (it is created, never replaced) and wait must be 0.
func asRepositoryWriter(ctx context.Context, command, out string, wait time.Duration, stderr io.Writer, write func() error) error {
	modelDir, ok := repository.VersionOf(out)
	if !ok {
		if wait != 0 {
			return fmt.Errorf("%s --wait goes with an --out that is a repository model's version, DIR/<name>/<n> (another --out needs no lock: it is created, never replaced)", command)
		}
		return write()
	}
	lock, err := lockRepository(ctx, command, modelDir, wait, stderr)
	if err != nil {
		return err
	}
	defer lock.Release()
	return write()
}

// addWaitFlag adds --wait to an authoring command.
func addWaitFlag(cmd *cobra.Command, wait *time.Duration) {
	cmd.Flags().DurationVar(wait, "wait", 0, "when --out is a repository model's version (DIR/<name>/<n>), or with --next-version: wait up to `duration` (e.g. 5m) while another process writes that model, instead of failing at once")
}

func newAddClassesCmd(model *modelOptions, stdout io.Writer) *cobra.Command {
	o := &addClassesOptions{model: model}
	cmd := &cobra.Command{
		Use:   "add-classes --model <dir> --from <folder> --out <new-dir>",
		Short: "Add classes from labelled images, without retraining",
		Long: fmt.Sprintf(`add-classes writes a new model directory that also predicts the classes in <folder>:
one sub-folder per class, named after it, holding at least %d of its images (10 to 50 work
well). Each image goes through the model's backbone once; a class is the Gaussian of its
features, estimated with the same shrinkage as the trained classes, so nothing is retrained
and the images are not kept. The new classes get the next class IDs and one new task; the
manifest records how many images each was added from.

The model directory is never modified, and --out must not exist yet (or be empty). Serve the
result by pointing the server's model path at it (e.g. swap a symlink) and reloading.

With --next-version, --out is a model of a model repository, DIR/<name> (serve
--model-repository DIR): the result is written as its next version, DIR/<name>/<N+1>/, from
--model or, without it, from the highest version there. The server serves it once it is loaded:
curl -X POST localhost:8081/v2/repository/models/<name>/load. One writer at a time: the command
holds the model's lock, DIR/<name>/.lock, from reading the highest version to writing the next;
while another holds it, it fails naming that process, or waits with --wait. A version is
created whole and never replaced: a number another writer took meanwhile moves it to the next.`, author.MinAddImages),
		Annotations: map[string]string{modelFlagsUsed: embedFlags},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAddClasses(cmd.Context(), o, stdout, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "", "`folder` with one sub-folder of images per new class (required)")
	cmd.Flags().StringVar(&o.out, "out", "", "new model `dir`ectory to write, or with --next-version a repository's DIR/<name> (required)")
	cmd.Flags().BoolVar(&o.nextVersion, "next-version", false, "write the next version of the repository model --out names, DIR/<name>/<N+1>/; without --model, from its highest version")
	addSkipUnreadableFlag(cmd, &o.skip)
	addWaitFlag(cmd, &o.wait)
	return cmd
}

func runAddClasses(ctx context.Context, o *addClassesOptions, stdout, stderr io.Writer) error {
	create := func(out string) (author.Added, error) {
		classes, opts, err := o.model.folderJob("add-classes", o.from, out, o.skip, stderr)
		if err != nil {
			return author.Added{}, err
		}
		return author.AddClasses(ctx, o.model.model, out, classes, opts...)
	}
	var added author.Added
	var err error
	if o.nextVersion && o.out != "" {
		added, err = addNextVersion(ctx, o, create, stderr)
	} else {
		err = asRepositoryWriter(ctx, "add-classes", o.out, o.wait, stderr, func() error {
			added, err = create(o.out)
			return err
		})
	}
	if err != nil {
		return flagError(err)
	}
	fmt.Fprintf(stdout, "wrote %s: %s plus %d classes\n", added.Dir, o.model.model, len(added.Classes))
	for _, c := range added.Classes {
		fmt.Fprintf(stdout, "  class %d %q (task %d) from %d images\n", c.ID, c.Name, c.Task, c.AddedImages)
	}
	return nil
}

// addNextVersion runs create for the next version of the repository model
// o.out under its lock (repository.LockFile), from o.model or its highest
// version.
func addNextVersion(ctx context.Context, o *addClassesOptions, create func(string) (author.Added, error), stderr io.Writer) (author.Added, error) {
	lock, err := lockRepository(ctx, "add-classes --next-version", o.out, o.wait, stderr)
	if err != nil {
		return author.Added{}, err
	}
	defer lock.Release()
	if o.model.model == "" {
		if o.model.model, err = repository.LatestVersion(o.out); err != nil {
			return author.Added{}, fmt.Errorf("add-classes --next-version without --model: %w", err)
		}
	}
	var added author.Added
	_, err = repository.CreateNextVersion(o.out, func(dir string) error {
		added, err = create(dir)
		return err
	})
	return added, err
}

// addSkipUnreadableFlag adds --skip-unreadable to a command that reads
// class folders.
func addSkipUnreadableFlag(cmd *cobra.Command, skip *bool) {
	cmd.Flags().BoolVar(skip, "skip-unreadable", false, "leave out the images that do not decode, naming them, and use the rest")
}

// folderJob checks the flags of a command that reads a folder of class
// folders into a new model directory, and returns the folder's classes
// and the options to open the model with. Every image is decoded first
// (author.CheckImages): the unreadable ones are named all at once, and
// refused unless skip, when they are left out with a note on stderr, as
// is what the folder listing passed over.
func (o *modelOptions) folderJob(command, from, out string, skip bool, stderr io.Writer) ([]author.LabelledImages, []infer.Option, error) {
	if o.model == "" || from == "" || out == "" {
		return nil, nil, fmt.Errorf("%s needs --model, --from and --out", command)
	}
	warnBehind(stderr, o.model)
	classes, skipped, err := author.ReadClassFolders(from)
	for _, s := range skipped {
		fmt.Fprintf(stderr, "bicyc-infer: %s: skipped %s\n", command, s)
	}
	if err != nil {
		return nil, nil, err
	}
	readable, err := author.CheckImages(classes, o.maxPixels)
	switch {
	case err != nil && !skip:
		return nil, nil, fmt.Errorf("%s %s (--skip-unreadable uses the rest): %w", command, from, err)
	case err != nil:
		fmt.Fprintf(stderr, "bicyc-infer: %s: left out, unreadable: %v\n", command, err)
		classes = readable
	}
	// Unknown answers play no part in embedding or scoring images, and an
	// acceptance rate would refuse an uncalibrated model.
	embed := *o
	embed.acceptRate, embed.threshold = 0, 0
	opts, err := embed.openOptions(io.Discard)
	return classes, opts, err
}

// flagError names the flag behind an authoring error where there is one:
// package author speaks of its output directory, the user typed --out.
func flagError(err error) error {
	if errors.Is(err, author.ErrOutputExists) {
		return fmt.Errorf("--out: %w", err)
	}
	return err
}
