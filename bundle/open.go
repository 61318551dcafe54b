package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"

	"github.com/bicyc/bicyc/bounded"
)

// Sentinels of Open and Bundle.ReadFile that callers branch on; the errors
// wrapping them name the file.
var (
	// ErrSchemaVersion: manifest.json has a schema_version this build does
	// not read (a newer bicyc wrote it, or it is damaged).
	ErrSchemaVersion = errors.New("unsupported manifest schema version")
	// ErrMissingFile: manifest.json, or a file it lists, is not there.
	ErrMissingFile = errors.New("missing model file")
	// ErrChecksum: a file's size or SHA-256 differs from the manifest.
	ErrChecksum = errors.New("model file checksum mismatch")
)

// maxManifestSize bounds manifest.json (it embeds the training config and
// metrics, a few hundred KiB at most) so a wrong file cannot exhaust memory.
const maxManifestSize = 64 << 20

// Bundle is an opened, verified model directory. Its fields are read-only
// after Open; a Bundle is safe for concurrent use. It holds no open files
// and needs no Close.
type Bundle struct {
	Dir        string
	Manifest   Manifest
	Prototypes Prototypes
	// ManifestVerified reports whether manifest.json matched the digest
	// file (DigestFile). It is false only for a directory written before
	// bicyc wrote digests, which has none: its manifest is then trusted as
	// it is, and the caller should say so (infer.Open prints a warning).
	ManifestVerified bool
}

// Open reads dir/manifest.json, checks its schema_version (ErrSchemaVersion;
// older versions are read and returned in the current version's terms)
// and content (ErrManifest), checks the manifest's own SHA-256 against
// manifest.sha256 (DigestFile; ErrChecksum, and see ManifestVerified for a
// directory without one), verifies the size and SHA-256 of every listed
// file (ErrMissingFile, ErrChecksum) and decodes prototypes.safetensors
// (ErrPrototypes), checking it against the manifest's classes and feature
// dim. The ONNX files are verified but not kept in memory: use Path or
// ReadFile. Every file is read through bounded.OpenRegular: a named pipe
// or device in place of a model file is refused, never waited on.
func Open(dir string) (*Bundle, error) {
	manifestPath := filepath.Join(dir, ManifestFile)
	raw, err := readLimited(manifestPath, maxManifestSize)
	if err != nil {
		return nil, err
	}
	if len(raw) > maxManifestSize {
		return nil, fmt.Errorf("bundle: %s: %w: larger than %d bytes", manifestPath, ErrManifest, maxManifestSize)
	}
	var version struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(raw, &version); err != nil {
		return nil, fmt.Errorf("bundle: %s: %w: %v", manifestPath, ErrManifest, err)
	}
	if v := version.SchemaVersion; v == nil || *v < oldestSchemaVersion || *v > SchemaVersion {
		got := "none"
		if v != nil {
			got = fmt.Sprint(*v)
		}
		return nil, fmt.Errorf("bundle: %s: %w: schema_version %s, this build reads %d to %d", manifestPath, ErrSchemaVersion, got, oldestSchemaVersion, SchemaVersion)
	}
	b := &Bundle{Dir: dir}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b.Manifest); err != nil {
		return nil, fmt.Errorf("bundle: %s: %w: %v", manifestPath, ErrManifest, err)
	}
	upgradeManifest(&b.Manifest)
	if err := b.Manifest.Validate(); err != nil {
		return nil, fmt.Errorf("bundle: %s: %w", manifestPath, err)
	}
	if b.ManifestVerified, err = checkDigest(dir, raw); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(b.Manifest.Files)) {
		if name == PrototypesFile {
			continue
		}
		if err := b.verify(name); err != nil {
			return nil, err
		}
	}
	protoBytes, err := b.ReadFile(PrototypesFile)
	if err != nil {
		return nil, err
	}
	if b.Prototypes, err = DecodePrototypes(protoBytes); err != nil {
		return nil, fmt.Errorf("bundle: %s: %w", b.Path(PrototypesFile), err)
	}
	if err := checkPrototypes(&b.Manifest, b.Prototypes); err != nil {
		return nil, fmt.Errorf("bundle: %s: %w", b.Path(PrototypesFile), err)
	}
	return b, nil
}

// upgradeManifest brings a manifest of an older schema version to the
// current one's terms: version 1 numbered tasks from 0.
func upgradeManifest(m *Manifest) {
	if m.SchemaVersion == 1 {
		for i := range m.Classes {
			m.Classes[i].Task++
		}
	}
	m.SchemaVersion = SchemaVersion
}

// checkPrototypes checks that p matches m: one prototype per class, the
// manifest's feature dim and normalisation.
func checkPrototypes(m *Manifest, p Prototypes) error {
	if p.K != len(m.Classes) || p.S != m.FeatureDim {
		return fmt.Errorf("%w: %d prototypes of dim %d, but the manifest has %d classes of dim %d",
			ErrPrototypes, p.K, p.S, len(m.Classes), m.FeatureDim)
	}
	if p.Normalize != m.Classifier.Normalize {
		return fmt.Errorf("%w: tables have normalize=%v, the manifest's classifier says %v",
			ErrPrototypes, p.Normalize, m.Classifier.Normalize)
	}
	return nil
}

// Path returns the path of the named file of the directory (a constant such
// as ModelFile). It does not check that the manifest lists it.
func (b *Bundle) Path(name string) string { return filepath.Join(b.Dir, name) }

// Has reports whether the manifest lists the named file (AdapterFile is
// absent from a model trained on one task).
func (b *Bundle) Has(name string) bool {
	_, ok := b.Manifest.Files[name]
	return ok
}

// ReadFile returns the content of a file the manifest lists, verified
// again against its size and SHA-256, so bytes handed to ONNX Runtime are
// exactly the exported ones even if the file changed after Open.
func (b *Bundle) ReadFile(name string) ([]byte, error) {
	want, ok := b.Manifest.Files[name]
	if !ok {
		return nil, fmt.Errorf("bundle: %s: %w: not listed in %s", b.Path(name), ErrMissingFile, ManifestFile)
	}
	data, err := readLimited(b.Path(name), want.Size)
	if err != nil {
		return nil, err
	}
	if err := checkSum(b.Path(name), want, int64(len(data)), sha256.Sum256(data)); err != nil {
		return nil, err
	}
	return data, nil
}

// verify streams one listed file through SHA-256 without keeping it.
func (b *Bundle) verify(name string) error {
	path := b.Path(name)
	want := b.Manifest.Files[name]
	f, _, err := bounded.OpenRegular(path)
	if err != nil {
		return openError(path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, want.Size+1))
	if err != nil {
		return fmt.Errorf("bundle: %s: %w", path, err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return checkSum(path, want, n, sum)
}

func checkSum(path string, want File, size int64, sum [sha256.Size]byte) error {
	if size > want.Size {
		return fmt.Errorf("bundle: %s: %w: larger than the %d bytes the manifest says", path, ErrChecksum, want.Size)
	}
	if size < want.Size {
		return fmt.Errorf("bundle: %s: %w: %d bytes, the manifest says %d", path, ErrChecksum, size, want.Size)
	}
	if got := hex.EncodeToString(sum[:]); got != want.SHA256 {
		return fmt.Errorf("bundle: %s: %w: sha256 %s, the manifest says %s", path, ErrChecksum, got, want.SHA256)
	}
	return nil
}

// readLimited reads a whole file, or limit+1 bytes of a longer one, so that
// the caller sees the size mismatch without reading a huge file.
func readLimited(path string, limit int64) ([]byte, error) {
	f, _, err := bounded.OpenRegular(path)
	if err != nil {
		return nil, openError(path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("bundle: %s: %w", path, err)
	}
	return data, nil
}

func openError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("bundle: %s: %w", path, ErrMissingFile)
	}
	return fmt.Errorf("bundle: %w", err)
}
