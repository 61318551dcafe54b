package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/durable"
)

// DigestFile holds the SHA-256 of manifest.json, in the format of
// sha256sum ("<64 hex digits>  manifest.json\n"; `sha256sum -c
// manifest.sha256` checks it by hand). The manifest holds the SHA-256 of
// every other file, so the digest covers every byte of the directory: a
// changed manifest (an edited preprocessing mean, a renamed class) is
// refused like a changed model file. It guards against damage and
// mistakes, not against someone who rewrites both files on purpose.
//
// Directories written before the digest existed have none; Open still
// reads them, with Bundle.ManifestVerified false so the caller can warn.
const DigestFile = "manifest.sha256"

// maxDigestSize bounds the digest file: one line of 80 bytes, with room to
// spare.
const maxDigestSize = 4 << 10

// digestOf returns the digest file's content for the given manifest.
func digestOf(manifest []byte) []byte {
	sum := sha256.Sum256(manifest)
	return []byte(hex.EncodeToString(sum[:]) + "  " + ManifestFile + "\n")
}

// checkDigest checks manifest, the bytes of dir's manifest.json, against
// dir's digest file. It reports false, and no error, when the directory
// has no digest file (written by an older bicyc); a digest that differs or
// does not parse is an error wrapping ErrChecksum.
func checkDigest(dir string, manifest []byte) (bool, error) {
	path := filepath.Join(dir, DigestFile)
	got, err := bounded.ReadFile(path, maxDigestSize)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("bundle: %w", err)
	}
	want := digestOf(manifest)
	if bytes.Equal(got, want) {
		return true, nil
	}
	line := string(got)
	if len(line) < 64 || !bytes.Equal(got[64:], want[64:]) {
		return false, fmt.Errorf("bundle: %s: %w: want one line \"<sha256>  %s\", got %.100q", path, ErrChecksum, ManifestFile, line)
	}
	return false, fmt.Errorf("bundle: %s: %w: sha256 %s, %s says %s (the manifest was changed after export)",
		filepath.Join(dir, ManifestFile), ErrChecksum, want[:64], DigestFile, line[:64])
}

// ManifestSum returns the SHA-256 of dir's manifest.json, read through
// bounded.ReadFile with the manifest's size limit. The manifest lists the
// checksum of every other file, so an unchanged sum means an unchanged
// model: a caller that reads a model, works a while and then writes a new
// one compares the sums before and after to know the model did not change
// underneath.
func ManifestSum(dir string) ([sha256.Size]byte, error) {
	manifest, err := bounded.ReadFile(filepath.Join(dir, ManifestFile), maxManifestSize)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("bundle: %w", err)
	}
	return sha256.Sum256(manifest), nil
}

// SealManifest writes dir's digest file for the manifest.json it holds now,
// atomically. It is for a deliberate edit of a manifest (renaming
// classes): after it, Open accepts the edited manifest if it is valid.
// Write seals the directories it writes itself.
func SealManifest(dir string) error {
	manifest, err := bounded.ReadFile(filepath.Join(dir, ManifestFile), maxManifestSize)
	if err != nil {
		return fmt.Errorf("bundle: seal: %w", err)
	}
	if err := durable.WriteFile(filepath.Join(dir, DigestFile), digestOf(manifest)); err != nil {
		return fmt.Errorf("bundle: seal %s: %w", dir, err)
	}
	return nil
}
