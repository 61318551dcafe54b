package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Write creates the model directory dir from m and files (file name ->
// content; every file except manifest.json). It sets m.SchemaVersion and
// m.Files (size and SHA-256 of each file), validates m and checks the
// prototypes against it (so Write never makes a directory Open rejects), and
// then:
//
//  1. writes every file and manifest.json (last) into a new hidden sibling
//     directory ".<name>.new-*", syncing each file and the directory;
//  2. if dir does not exist, renames the new directory to dir; if it does,
//     renames the old one into a hidden sibling ".<name>.old-*", renames the
//     new one to dir, and only then removes the old one.
//
// On Linux step 2 is one atomic exchange of the two directories. A crash
// therefore never leaves a half-written directory at dir: dir is either the
// old model or the complete new one (or, where the exchange is unavailable
// and the crash falls between the two renames of step 2, absent with the old
// model intact in ".<name>.old-*", which the next Write moves back). To
// protect unrelated data, an existing dir is replaced only if it is empty
// or holds a manifest.json. Concurrent Writes to the same dir are not
// supported.
func Write(dir string, m *Manifest, files map[string][]byte) error {
	if err := recoverInterrupted(filepath.Clean(dir)); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	m.SchemaVersion = SchemaVersion
	m.Files = make(map[string]File, len(files))
	for name, b := range files {
		sum := sha256.Sum256(b)
		m.Files[name] = File{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b))}
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	protos, err := DecodePrototypes(files[PrototypesFile])
	if err == nil {
		err = checkPrototypes(m, protos)
	}
	if err != nil {
		return fmt.Errorf("bundle: write %s: %s: %w", dir, PrototypesFile, err)
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("bundle: write %s: encode manifest: %w", dir, err)
	}
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := checkReplaceable(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".new-")
	if err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := writeSynced(filepath.Join(tmp, name), files[name]); err != nil {
			return fmt.Errorf("bundle: write %s: %w", dir, err)
		}
	}
	if err := writeSynced(filepath.Join(tmp, ManifestFile), append(manifest, '\n')); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	if err := syncDir(tmp); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	if err := swapIn(tmp, dir); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	committed = true
	return nil
}

// errNoExchange reports that the system cannot swap two directories atomically.
var errNoExchange = errors.New("atomic directory exchange is not supported")

// recoverInterrupted undoes what a crashed Write left beside dir: new
// directories it never swapped in are removed, and if dir itself is missing
// because the crash fell between the two renames of the fallback swap, the
// previous model is moved back from its ".<name>.old-*" holder.
func recoverInterrupted(dir string) error {
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
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(old, ManifestFile)); err == nil {
				if err := os.Rename(old, dir); err != nil {
					return err
				}
			}
		}
		if err := os.RemoveAll(holder); err != nil {
			return err
		}
	}
	return nil
}

// checkReplaceable refuses to replace anything but an empty directory or a
// previous model directory.
func checkReplaceable(dir string) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("bundle: write %s: exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
		return fmt.Errorf("bundle: write %s: refusing to replace a non-empty directory without %s", dir, ManifestFile)
	}
	return nil
}

// swapIn moves the complete directory tmp to dir. An existing dir is
// exchanged with tmp in one atomic rename where the system has one (Linux
// renameat2 RENAME_EXCHANGE), so dir always names a complete model;
// elsewhere it is kept aside until the new one is in place.
func swapIn(tmp, dir string) error {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
		return syncDir(parent)
	}
	switch err := exchange(tmp, dir); {
	case err == nil:
		if err := syncDir(parent); err != nil {
			return err
		}
		return os.RemoveAll(tmp) // now the previous model
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
			return fmt.Errorf("%w (the previous model is kept at %s: %v)", err, old, back)
		}
		os.Remove(holder)
		return err
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	return os.RemoveAll(holder)
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes renames and creations inside dir durable.
func syncDir(dir string) error {
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
