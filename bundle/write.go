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

	"github.com/bicyc/bicyc/durable"
)

// Write creates the model directory dir from m and files (file name ->
// content; every file except manifest.json). It sets m.SchemaVersion and
// m.Files (size and SHA-256 of each file), validates m and checks the
// prototypes against it (so Write never makes a directory Open rejects), and
// then:
//
//  1. writes every file, manifest.json and its digest manifest.sha256
//     (DigestFile) into a new hidden sibling directory ".<name>.new-*"
//     (durable.NewDir), syncing each file;
//  2. replaces dir with it (durable.ReplaceDir): on Linux one atomic
//     exchange of the two directories, elsewhere two renames with the old
//     model kept aside in ".<name>.old-*" until the new one is in place.
//
// A crash therefore never leaves a half-written directory at dir: dir is
// either the old model or the complete new one (or, where the exchange is
// unavailable and the crash falls between the two renames, absent with the
// old model intact in ".<name>.old-*", which the next Write moves back). To
// protect unrelated data, an existing dir is replaced only if it is empty
// or holds a manifest.json. Of concurrent Writes to the same dir the last
// one's model stays (a run's export holds the run's lock).
func Write(dir string, m *Manifest, files map[string][]byte) error {
	return write(dir, m, files, durable.ReplaceDir)
}

// Create is Write for a new model directory: dir must not exist or be
// empty, and is never replaced, even when another writer creates it
// meanwhile (durable.CreateDir): the error then wraps fs.ErrExist and
// nothing was written. Versions of a model (a repository's DIR/<name>/<n>,
// bicyc-infer's authoring commands) are created so.
func Create(dir string, m *Manifest, files map[string][]byte) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("bundle: create %s: exists and is not empty: %w", dir, fs.ErrExist)
	}
	return write(dir, m, files, durable.CreateDir)
}

func write(dir string, m *Manifest, files map[string][]byte, place func(tmp, dir string) error) error {
	if err := durable.Recover(dir, isModel); err != nil {
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
	if err := checkReplaceable(dir); err != nil {
		return err
	}
	tmp, err := durable.NewDir(dir)
	if err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(tmp)
		}
	}()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := durable.WriteFile(filepath.Join(tmp, name), files[name]); err != nil {
			return fmt.Errorf("bundle: write %s: %w", dir, err)
		}
	}
	manifest = append(manifest, '\n')
	if err := durable.WriteFile(filepath.Join(tmp, ManifestFile), manifest); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	if err := durable.WriteFile(filepath.Join(tmp, DigestFile), digestOf(manifest)); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	if err := place(tmp, dir); err != nil {
		return fmt.Errorf("bundle: write %s: %w", dir, err)
	}
	committed = true
	return nil
}

// isModel reports whether dir holds a manifest, the last file Write writes.
func isModel(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ManifestFile))
	return err == nil
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
	if !isModel(dir) {
		return fmt.Errorf("bundle: write %s: refusing to replace a non-empty directory without %s", dir, ManifestFile)
	}
	return nil
}
