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
//	err = durable.CreateDir(tmp, dir)       // or: dir is new, never one that exists
//
// and, before the next replacement, durable.Recover(dir, complete) clears
// what an interrupted one left behind. RemoveTemp clears the temporary
// files a killed WriteFile left in a directory.
//
// A directory or file has one writer at a time (package lockfile keeps
// runs and repository models so); what durable does when two race is
// still safe: CreateDir never replaces what another writer made, and
// Recover leaves alone the ".<name>.new-*" of a writer that still runs.
package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bicyc/bicyc/lockfile"
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

// RemoveTemp removes the temporary files ".<name>.tmp*" that a WriteFile
// or CreateFile killed before its rename left in dir, and returns their
// paths. Call it only while no other process writes into dir (the run
// lock, for a run directory): a live writer's temporary file is removed
// too.
func RemoveTemp(dir string) ([]string, error) {
	found, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*"))
	var removed []string
	for _, path := range found {
		if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, path)
	}
	return removed, nil
}

// NewDir creates an empty directory ".<name>.new-<maker>-*" beside dir (and
// dir's parent if needed), mode 0755, in which to build dir's replacement;
// <maker> names this process (boot id, pid and start time) so that Recover
// tells a live writer's directory from litter. Recover removes the litter,
// so a crash before ReplaceDir leaves nothing that the next writer does not
// clear.
func NewDir(dir string) (string, error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".new-"+maker+"-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// maker names this process in the directories NewDir makes:
// <boot id's first 8 characters>.<pid>.<start time>.
var maker = func() string {
	boot := strings.ReplaceAll(lockfile.BootID(), "-", "")
	boot = boot[:min(8, len(boot))]
	start, _ := lockfile.ProcessStart(os.Getpid())
	return fmt.Sprintf("%s.%d.%d", boot, os.Getpid(), start)
}()

// staleAfter is how old a ".<name>.new-*" directory made on another host
// (or boot) must be for Recover to remove it: the liveness of its maker
// cannot be seen from here, and building a directory takes seconds.
const staleAfter = lockfile.DefaultLease

// inProgress reports whether the directory tmp, made by NewDir, may still
// be filled by its maker: a live process of this host and boot, or, from
// another host or boot, one changed within staleAfter. A name without a
// maker is an older version's litter.
func inProgress(tmp string) bool {
	_, tag, _ := strings.Cut(filepath.Base(tmp), ".new-")
	f := strings.Split(strings.SplitN(tag, "-", 2)[0], ".")
	if len(f) != 3 {
		return false
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if boot := strings.Split(maker, ".")[0]; boot != "" && f[0] == boot {
		return lockfile.Running(pid, start)
	}
	info, err := os.Lstat(tmp)
	return err == nil && time.Since(info.ModTime()) < staleAfter
}

// errNoExchange reports that the system cannot swap two directories atomically.
var errNoExchange = errors.New("atomic directory exchange is not supported")

// errNoNoReplace reports that the system cannot rename without replacing.
var errNoNoReplace = errors.New("rename without replacing is not supported")

// renameNew is renameNoReplace; tests replace it to take the fallback path.
var renameNew = renameNoReplace

// CreateDir moves the complete directory tmp (from NewDir) to dir after
// syncing it, where dir must not exist, or be an empty directory: it never
// replaces a directory with content, even one another writer puts there
// meanwhile (Linux renameat2 RENAME_NOREPLACE; elsewhere rename(2), which
// also refuses a non-empty target but replaces an empty one). The error
// then wraps fs.ErrExist, and tmp is left for the caller.
func CreateDir(tmp, dir string) error {
	dir = filepath.Clean(dir)
	if err := SyncDir(tmp); err != nil {
		return err
	}
	// An empty directory holds nothing to lose: it is the target a user
	// made (mkdir out) for the new one.
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotEmpty(err) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	err := renameNew(tmp, dir)
	if errors.Is(err, errNoNoReplace) {
		err = os.Rename(tmp, dir)
	}
	if isNotEmpty(err) {
		err = fmt.Errorf("%s: %w", dir, fs.ErrExist)
	}
	if err != nil {
		return err
	}
	return SyncDir(filepath.Dir(dir))
}

// isNotEmpty reports an error of removing or renaming onto a directory
// that exists (and has content).
func isNotEmpty(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && (errno == syscall.ENOTEMPTY || errno == syscall.EEXIST || errno == syscall.ENOTDIR) || errors.Is(err, fs.ErrExist)
}

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
		// Absent a moment ago: a directory another writer creates
		// meanwhile is not ours to replace.
		err := renameNew(tmp, dir)
		if errors.Is(err, errNoNoReplace) {
			err = os.Rename(tmp, dir)
		}
		if isNotEmpty(err) {
			return fmt.Errorf("%s: created by another writer meanwhile: %w", dir, fs.ErrExist)
		}
		if err != nil {
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
// it: unfinished ".<name>.new-*" directories are removed, except those of
// a writer that may still be at work (a live process of this host, or a
// directory from another host changed within the lock lease), and if dir is
// missing because a crash fell between the two renames of ReplaceDir's
// fallback, the previous tree is moved back from its ".<name>.old-*"
// holder, provided complete accepts it. Call it before building a new
// replacement.
func Recover(dir string, complete func(dir string) bool) error {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	news, _ := filepath.Glob(filepath.Join(parent, "."+base+".new-*"))
	for _, d := range news {
		if inProgress(d) {
			continue
		}
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
