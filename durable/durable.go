// Package durable replaces files and directories so that a crash, a kill or
// a full disk never leaves a half-written one under the final name: new
// content is built beside its target, synced, and renamed over it.
//
// Every writer of saved work in bicyc goes through it: run files and
// checkpoints (train), safetensors files, model bundles (bundle), sweep
// records (sweep) and published reports (report). One home, because "never
// lose saved work" is a property each of them must have in the same way.
//
// Files:
//
//	durable.WriteFile(path, b)              // path holds the old or the new bytes, never part
//	durable.CreateFile(path, b)             // the same, but fails if path exists
//
// Directories:
//
//	tmp, err := durable.NewDir(dir)         // hidden sibling ".<name>.new-*"
//	... write the files into tmp ...
//	err = durable.ReplaceDir(tmp, dir)      // dir is the old or the new tree
//
// and, before the next replacement, durable.Recover(dir, complete) clears
// what an interrupted one left behind.
package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes b to path through a temporary file in the same
// directory, synced and renamed into place, and then syncs the directory,
// so after a crash path holds either its previous content or b. The file
// keeps the permissions of the one it replaces, 0644 when new. Errors name
// path.
func WriteFile(path string, b []byte) error {
	if err := writeFile(path, b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v as indented JSON and a final newline to path, as
// WriteFile does, so readers never see half a file.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return WriteFile(path, append(b, '\n'))
}

// CreateFile is WriteFile for a file that must not exist yet: b goes to a
// synced temporary file that is then hard-linked to path, which fails with
// an error wrapping fs.ErrExist if path exists, so a file is never
// overwritten, even by a concurrent writer, and never seen half-written.
func CreateFile(path string, b []byte) error {
	if err := createFile(path, b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func createFile(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, werr := f.Write(b)
	merr := f.Chmod(0o644)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, merr, serr, cerr); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

func writeFile(path string, b []byte) error {
	mode := fs.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	// CreateTemp makes files private; saved work is ordinary files.
	merr := f.Chmod(mode)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, merr, serr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir makes the creations and renames inside dir durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// NewDir creates an empty directory ".<name>.new-*" beside dir (and dir's
// parent if needed), mode 0755, in which to build dir's replacement.
// Recover removes such directories, so a crash before ReplaceDir leaves
// nothing but litter that the next writer clears.
func NewDir(dir string) (string, error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".new-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// errNoExchange reports that the system cannot swap two directories atomically.
var errNoExchange = errors.New("atomic directory exchange is not supported")

// exchangeDirs is exchange; tests replace it to take the fallback path.
var exchangeDirs = exchange

// ReplaceDir moves the complete directory tmp (from NewDir) to dir after
// syncing it. If dir exists, the two are exchanged in one atomic rename
// where the system has one (Linux renameat2 RENAME_EXCHANGE), so dir always
// names a complete tree, and the previous tree is then removed. Elsewhere
// the previous tree is first moved into a hidden sibling ".<name>.old-*";
// a crash between that rename and the next leaves dir absent and the
// previous tree there, which Recover moves back.
func ReplaceDir(tmp, dir string) error {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := SyncDir(tmp); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
		return SyncDir(parent)
	}
	switch err := exchangeDirs(tmp, dir); {
	case err == nil:
		if err := SyncDir(parent); err != nil {
			return err
		}
		return os.RemoveAll(tmp) // now the previous tree
	case !errors.Is(err, errNoExchange):
		return err
	}
	holder, err := os.MkdirTemp(parent, "."+base+".old-")
	if err != nil {
		return err
	}
	old := filepath.Join(holder, base)
	if err := os.Rename(dir, old); err != nil {
		os.Remove(holder)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if back := os.Rename(old, dir); back != nil {
			return fmt.Errorf("%w (the previous %s is kept at %s: %v)", err, base, old, back)
		}
		os.Remove(holder)
		return err
	}
	if err := SyncDir(parent); err != nil {
		return err
	}
	return os.RemoveAll(holder)
}

// Recover undoes what an interrupted NewDir/ReplaceDir of dir left beside
// it: unfinished ".<name>.new-*" directories are removed, and if dir is
// missing because a crash fell between the two renames of ReplaceDir's
// fallback, the previous tree is moved back from its ".<name>.old-*"
// holder, provided complete accepts it. Call it before building a new
// replacement; writers of the same dir must not run concurrently.
func Recover(dir string, complete func(dir string) bool) error {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	news, _ := filepath.Glob(filepath.Join(parent, "."+base+".new-*"))
	for _, d := range news {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	olds, _ := filepath.Glob(filepath.Join(parent, "."+base+".old-*"))
	for _, holder := range olds {
		old := filepath.Join(holder, base)
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) && complete(old) {
			if err := os.Rename(old, dir); err != nil {
				return fmt.Errorf("restoring %s from %s: %w", dir, old, err)
			}
		}
		if err := os.RemoveAll(holder); err != nil {
			return err
		}
	}
	return nil
}
