package repository

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/bicyc/bicyc/names"
)

// ErrNotFound is wrapped when a model directory of the repository does
// not exist.
var ErrNotFound = errors.New("not found")

// Models returns the model names in repository dir, sorted: its
// directories whose names follow names.Model.
func Models(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model repository: %w", err)
	}
	var models []string
	for _, e := range entries {
		if names.Model(e.Name()) == nil && isDir(filepath.Join(dir, e.Name())) {
			models = append(models, e.Name())
		}
	}
	return models, nil
}

// Versions returns the version directories of the repository model in
// modelDir (DIR/<name>) by number. A missing modelDir wraps ErrNotFound.
func Versions(dir string) (map[int64]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no model directory %s in the repository: %w", dir, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	out := map[int64]string{}
	for _, e := range entries {
		n, err := ParseVersion(e.Name())
		if err == nil && isDir(filepath.Join(dir, e.Name())) {
			out[n] = filepath.Join(dir, e.Name())
		}
	}
	return out, nil
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// ParseVersion parses a version number: a positive decimal integer
// without sign or leading zeros.
func ParseVersion(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("version %q: want a positive whole number", s)
	}
	return n, nil
}

// LatestVersion returns the directory of the highest version of the
// repository model in modelDir (DIR/<name>).
func LatestVersion(modelDir string) (string, error) {
	found, err := Versions(modelDir)
	if err != nil {
		return "", err
	}
	numbers := slices.Sorted(maps.Keys(found))
	if len(numbers) == 0 {
		return "", fmt.Errorf("%s has no version directories (1/, 2/, ...)", modelDir)
	}
	return found[numbers[len(numbers)-1]], nil
}

// NextVersion returns the directory of the next version of the repository
// model in modelDir (DIR/<name>): one more than its highest version, or 1.
// modelDir need not exist yet. CreateNextVersion creates it without a race.
func NextVersion(modelDir string) (string, error) {
	found, err := Versions(modelDir)
	if errors.Is(err, ErrNotFound) {
		found, err = nil, nil
	}
	if err != nil {
		return "", err
	}
	next := int64(1)
	for n := range found {
		next = max(next, n+1)
	}
	return filepath.Join(modelDir, strconv.FormatInt(next, 10)), nil
}

// LockFile is the writer lock of a repository model, DIR/<name>/.lock
// (package lockfile; a hidden entry, so never a version): the tools that
// write its versions hold it, one at a time. The server only reads.
const LockFile = ".lock"

// VersionOf reports whether dir names a version of a repository model,
// DIR/<name>/<n> (n a version number, whether or not it exists yet), and
// returns the model's directory DIR/<name>, whose LockFile its writers
// hold.
func VersionOf(dir string) (modelDir string, ok bool) {
	dir = filepath.Clean(dir)
	if _, err := ParseVersion(filepath.Base(dir)); err != nil {
		return "", false
	}
	modelDir = filepath.Dir(dir)
	return modelDir, names.Model(filepath.Base(modelDir)) == nil
}

// maxVersionTries bounds how many numbers CreateNextVersion tries.
const maxVersionTries = 10

// CreateNextVersion creates the next version of the repository model in
// modelDir: create must write a whole model directory at the path it is
// given, never over an existing one (bundle.Create), failing with an error
// wrapping fs.ErrExist if the directory exists. When it does (another
// writer took that number meanwhile), the next number is tried, so no
// version is ever replaced; it returns the version's directory. A model is
// written there whole or not at all, so a server never sees a version
// half-written; it serves it once loaded (the repository API's load, or a
// reload).
func CreateNextVersion(modelDir string, create func(dir string) error) (string, error) {
	for range maxVersionTries {
		dir, err := NextVersion(modelDir)
		if err != nil {
			return "", err
		}
		if err = create(dir); !errors.Is(err, fs.ErrExist) {
			return dir, err
		}
	}
	return "", fmt.Errorf("%s: %d versions were created by other writers while this one was written", modelDir, maxVersionTries)
}
