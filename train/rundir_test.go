package train

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestNewLeavesNothingOnBadConfig starts runs whose configuration passes
// config.Validate but fails once the data is known: a stream of more tasks
// than Fashion-MNIST has classes, an image folder that does not exist, and
// a fork of a run that is not there. Each fails, and no run directory (nor
// log.txt) is left behind.
func TestNewLeavesNothingOnBadConfig(t *testing.T) {
	tooManyTasks := quickConfig("bicyc", 0)
	tooManyTasks.Stream.Tasks = 11
	noFolder := quickConfig("bicyc", 0)
	noFolder.Data.Kind = "imagefolder"
	noFolder.Data.TrainDir = filepath.Join(t.TempDir(), "missing", "train")
	noFolder.Data.TestDir = filepath.Join(t.TempDir(), "missing", "test")
	start := []func(dir string) error{
		func(dir string) error { _, err := New(tooManyTasks, dir, Options{Log: io.Discard}); return err },
		func(dir string) error { _, err := New(noFolder, dir, Options{Log: io.Discard}); return err },
		func(dir string) error {
			_, err := Fork(filepath.Join(t.TempDir(), "absent"), quickConfig("bicyc", 0), dir, Options{Log: io.Discard})
			return err
		},
	}
	for i, f := range start {
		dir := filepath.Join(t.TempDir(), "runs", "bad")
		if err := f(dir); err == nil {
			t.Errorf("case %d: the run started", i)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("case %d: the failed start left %s behind (%v)", i, dir, err)
		}
	}
}
