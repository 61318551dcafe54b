package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
)

// The fuzz targets of this package cover what Open reads from disk: the
// manifest JSON (FuzzManifest), prototypes.safetensors (FuzzDecodePrototypes)
// and whole directories (FuzzOpen), plus the promise that Open accepts and
// reproduces whatever Write produced (FuzzWriteOpen). scripts/fuzz.sh runs
// them for a fixed time; interesting inputs live in testdata/fuzz.

// sentinels are the errors every Open failure must wrap one of.
var sentinels = []error{ErrSchemaVersion, ErrMissingFile, ErrChecksum, ErrManifest, ErrPrototypes}

// fuzzPrototypes returns K prototypes in S dimensions with distinct finite
// values derived from seed.
func fuzzPrototypes(k, s int, seed float32, normalize bool) Prototypes {
	p := Prototypes{K: k, S: s, Means: make([]float32, k*s), Covariances: make([]float32, k*PackedDim(s)),
		Bias: make([]float32, k), Normalize: normalize}
	for i := range p.Means {
		p.Means[i] = seed + float32(i)
	}
	for i := range p.Covariances {
		p.Covariances[i] = float32(i%5) - seed
	}
	for i := range p.Bias {
		p.Bias[i] = -float32(i) / 3
	}
	return p
}

// fuzzModel returns a valid manifest of K classes (IDs 10, 11, ...) split
// into tasks of at most two, and its files; the ONNX files are stand-in
// bytes, as this package only stores and verifies them.
func fuzzModel(tb testing.TB, k, s int, adapter bool) (*Manifest, map[string][]byte) {
	tb.Helper()
	protos, err := fuzzPrototypes(k, s, 0.5, true).Encode()
	if err != nil {
		tb.Fatal(err)
	}
	m := &Manifest{
		BicycVersion: "v0.0.0-fuzz", CreatedAt: time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC), MinRuntimeVersion: MinRuntimeVersion,
		Backbone: "convnet", FeatureDim: s,
		Classifier: gauss.ClassifierOptions{Normalize: true, Shrink: 1, TopK: 1},
		Preprocess: imaging.Preprocess{Channels: 3, Height: 32, Width: 32, Mean: []float32{0.5, 0.5, 0.5},
			Std: []float32{0.25, 0.25, 0.25}, Resize: imaging.ResizeCatmullRom, Background: [3]uint8{255, 255, 255}},
		Config: json.RawMessage(`{"epochs":1}`),
	}
	for c := range k {
		if c%2 == 0 {
			m.Tasks = append(m.Tasks, nil)
		}
		t := len(m.Tasks) - 1
		m.Tasks[t] = append(m.Tasks[t], 10+c)
		m.Classes = append(m.Classes, Class{ID: 10 + c, Name: fmt.Sprintf("class %d", c), Task: t + 1})
	}
	files := map[string][]byte{BackboneFile: []byte("backbone"), ClassifierFile: []byte("classifier"),
		ModelFile: []byte("model"), PrototypesFile: protos}
	if adapter {
		m.Adapter = "mlp"
		files[AdapterFile] = []byte("adapter")
	}
	return m, files
}

// writtenManifest writes a model with Write and returns its manifest.json
// and prototypes.safetensors bytes.
func writtenManifest(tb testing.TB, k, s int, adapter bool) (manifest, protos []byte) {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "model")
	m, files := fuzzModel(tb, k, s, adapter)
	if err := Write(dir, m, files); err != nil {
		tb.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		tb.Fatal(err)
	}
	return manifest, files[PrototypesFile]
}

// decodeManifest decodes raw as Open does: strictly, unknown fields being
// errors.
func decodeManifest(raw []byte) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&m)
	return m, err
}

// FuzzManifest decodes fuzzed manifest JSON as Open does and validates it.
// Invariants: Validate's errors wrap ErrManifest; a valid manifest encoded
// as Write encodes it decodes to a manifest that is valid again and encodes
// to the same bytes.
func FuzzManifest(f *testing.F) {
	for i, adapter := range []bool{true, false} {
		raw, _ := writtenManifest(f, 3+i, 2, adapter)
		f.Add(raw)
	}
	f.Add([]byte(`{"schema_version":1,"backbone":"convnet","feature_dim":1,"classifier":{"top_k":1,"shrink":0},` +
		`"preprocess":{"channels":1,"height":1,"width":1,"mean":[0],"std":[1]},"classes":[{"id":-5,"task":0}],"tasks":[[-5]],` +
		`"files":{"backbone.onnx":{"sha256":"` + strings.Repeat("ab", 32) + `","size":0}}}`))
	f.Add([]byte(`{"classes":[{"id":1,"task":1},{"id":1,"task":0}],"tasks":[[1],[1,2]],"files":{"../x":{},"":{"sha256":"G"}},` +
		`"preprocess":{"channels":3,"mean":[1e40],"std":[-0]},"classifier":{"shrink":-1},"created_at":"2026-01-01T00:00:00+14:00"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := decodeManifest(raw)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			if !errors.Is(err, ErrManifest) {
				t.Fatalf("Validate error %q does not wrap ErrManifest", err)
			}
			return
		}
		enc, err := json.MarshalIndent(&m, "", "  ")
		if err != nil {
			t.Fatalf("encoding a valid manifest: %v", err)
		}
		again, err := decodeManifest(enc)
		if err != nil {
			t.Fatalf("decoding an encoded valid manifest: %v\n%s", err, enc)
		}
		if err := again.Validate(); err != nil {
			t.Fatalf("re-decoded manifest is invalid: %v", err)
		}
		enc2, err := json.MarshalIndent(&again, "", "  ")
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("manifest changes on a round trip (%v):\n%s\nthen\n%s", err, enc, enc2)
		}
	})
}

// sameFloats compares float32 slices bit for bit.
func sameFloats(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// sameContent reports whether p and q hold bit-identical prototypes and
// tables.
func sameContent(p, q Prototypes) bool {
	return p.K == q.K && p.S == q.S && sameFloats(p.Means, q.Means) && sameFloats(p.Covariances, q.Covariances) &&
		p.Normalize == q.Normalize && sameFloats(p.Bias, q.Bias)
}

// FuzzDecodePrototypes feeds arbitrary bytes to DecodePrototypes.
// Invariants: errors wrap ErrPrototypes; decoded prototypes pass Validate,
// and Encode then DecodePrototypes gives them back bit for bit.
func FuzzDecodePrototypes(f *testing.F) {
	for _, p := range []Prototypes{fuzzPrototypes(1, 1, 2, false), fuzzPrototypes(3, 2, -0.25, true)} {
		b, err := p.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePrototypes(b)
		if err != nil {
			if !errors.Is(err, ErrPrototypes) {
				t.Fatalf("error %q does not wrap ErrPrototypes", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("decoded prototypes are invalid: %v", err)
		}
		enc, err := p.Encode()
		if err != nil {
			t.Fatalf("Encode of decoded prototypes: %v", err)
		}
		again, err := DecodePrototypes(enc)
		if err != nil || !sameContent(p, again) {
			t.Fatalf("prototypes change on a round trip (error %v)", err)
		}
	})
}

// withTrueChecksums rewrites the "files" entries of a manifest that is a
// JSON object, keeping its names, to the size and SHA-256 of the files in
// dir, so fuzzed manifests and prototypes get past the checksums to the
// checks behind them. Other input is returned unchanged.
func withTrueChecksums(raw []byte, dir string) []byte {
	var top map[string]json.RawMessage
	var files map[string]File
	if json.Unmarshal(raw, &top) != nil || json.Unmarshal(top["files"], &files) != nil {
		return raw
	}
	for name := range files {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && checkFileName(name) == nil {
			sum := sha256.Sum256(b)
			files[name] = File{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b))}
		}
	}
	enc, err := json.Marshal(files)
	if err != nil {
		return raw
	}
	top["files"] = enc
	if fixed, err := json.Marshal(top); err == nil {
		return fixed
	}
	return raw
}

// FuzzOpen opens a model directory whose manifest.json and
// prototypes.safetensors are fuzzed (with trueSums, the manifest's file
// entries are first corrected to the files on disk). Invariants: an error
// wraps one of the package's sentinels and names the directory; a
// successful Open returns a valid manifest, valid prototypes that match it,
// and verified file contents.
func FuzzOpen(f *testing.F) {
	for i, adapter := range []bool{true, false} {
		manifest, protos := writtenManifest(f, 2+i, 3-i, adapter)
		f.Add(manifest, protos, false)
		f.Add(manifest, protos[:len(protos)-1], true)
	}
	manifest, protos := writtenManifest(f, 1, 1, false)
	f.Add(bytes.Replace(manifest, []byte(`"schema_version": 1`), []byte(`"schema_version": 2`), 1), protos, false)
	f.Add(manifest, fuzzEncode(f, fuzzPrototypes(2, 1, 1, true)), true)
	f.Add(manifest, fuzzEncode(f, fuzzPrototypes(1, 1, 1, false)), true)

	dir := filepath.Join(f.TempDir(), "model")
	standIns := map[string][]byte{BackboneFile: []byte("backbone"), ClassifierFile: []byte("classifier"),
		ModelFile: []byte("model"), AdapterFile: []byte("adapter")}
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	for name, b := range standIns {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, manifest, protos []byte, trueSums bool) {
		if err := os.WriteFile(filepath.Join(dir, PrototypesFile), protos, 0o644); err != nil {
			t.Fatal(err)
		}
		if trueSums {
			manifest = withTrueChecksums(manifest, dir)
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(dir)
		if err != nil {
			if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q wraps none of the sentinels or does not name the directory", err)
			}
			return
		}
		if err := b.Manifest.Validate(); err != nil {
			t.Fatalf("opened manifest is invalid: %v", err)
		}
		if err := b.Prototypes.Validate(); err != nil || checkPrototypes(&b.Manifest, b.Prototypes) != nil {
			t.Fatalf("opened prototypes are invalid (%v) or do not match the manifest", err)
		}
		for name, want := range standIns {
			if got, err := b.ReadFile(name); b.Has(name) && (err != nil || !bytes.Equal(got, want)) {
				t.Fatalf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
			}
		}
	})
}

func fuzzEncode(tb testing.TB, p Prototypes) []byte {
	tb.Helper()
	b, err := p.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzWriteOpen writes models built from fuzzed manifest fields (class IDs,
// names, task split, sizes, preprocessing, classifier options, config) and
// opens them. Invariants: Write either refuses, with an error that wraps
// ErrManifest or ErrPrototypes or reports encoding the manifest, and leaves
// no directory behind, or writes a directory that Open accepts and whose
// manifest and prototypes equal what was written.
func FuzzWriteOpen(f *testing.F) {
	f.Add([]byte{0, 1, 7}, "T-shirt/top", uint8(1), uint8(2), true, true, uint16(28), uint16(28), float32(0.286), float32(0.353), int8(3), 3.0, []byte(`{"epochs":2}`))
	f.Add([]byte{5}, "", uint8(0), uint8(0), false, false, uint16(1), uint16(8192), float32(0), float32(1e-30), int8(1), 0.0, []byte{})
	f.Add([]byte{2, 2}, "dup", uint8(3), uint8(1), false, true, uint16(0), uint16(9000), float32(1), float32(-1), int8(0), -1.0, []byte(`{`))
	f.Add([]byte{1, 2, 3}, "café", uint8(1), uint8(1), true, false, uint16(32), uint16(32), float32(0.5), float32(0.5), int8(2), 1.0, []byte(`null`))
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, ids []byte, name string, split, s uint8, adapter, rgb bool, h, w uint16,
		mean, std float32, topK int8, shrink float64, config []byte) {
		if len(ids) == 0 || len(ids) > 8 {
			return
		}
		dim := 1 + int(s)%4
		m, files := fuzzModel(t, len(ids), dim, adapter)
		// Tasks: the first 1+split%len(ids) classes, then the rest.
		first := 1 + int(split)%len(ids)
		m.Tasks = [][]int{nil}
		for i, id := range ids {
			task := 0
			if i >= first {
				task = 1
				if len(m.Tasks) == 1 {
					m.Tasks = append(m.Tasks, nil)
				}
			}
			m.Tasks[task] = append(m.Tasks[task], int(id))
			m.Classes[i] = Class{ID: int(id), Name: fmt.Sprintf("%s %d", name, i), Task: task + 1}
		}
		m.Preprocess = imaging.Preprocess{Channels: 1, Height: int(h), Width: int(w), Mean: []float32{mean}, Std: []float32{std}}
		if rgb {
			m.Preprocess.Channels, m.Preprocess.Mean, m.Preprocess.Std = 3, []float32{mean, mean, mean}, []float32{std, std, std}
		}
		m.Classifier.TopK, m.Classifier.Shrink = int(topK), shrink
		m.Config = config
		dir := filepath.Join(root, "model")
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := Write(dir, m, files); err != nil {
			if !errors.Is(err, ErrManifest) && !errors.Is(err, ErrPrototypes) && !strings.Contains(err.Error(), "encode manifest") {
				t.Fatalf("Write error %q wraps neither ErrManifest nor ErrPrototypes", err)
			}
			if _, statErr := os.Stat(dir); !errors.Is(statErr, os.ErrNotExist) {
				t.Fatalf("failed Write left %s behind (%v)", dir, statErr)
			}
			return
		}
		b, err := Open(dir)
		if err != nil {
			t.Fatalf("Open rejects what Write wrote: %v", err)
		}
		if !slices.Equal(b.Manifest.Classes, m.Classes) {
			t.Fatalf("classes after Write and Open: %#v, want %#v", b.Manifest.Classes, m.Classes)
		}
		want, _ := json.Marshal(m)
		got, _ := json.Marshal(&b.Manifest)
		if !bytes.Equal(got, want) {
			t.Fatalf("manifest after Write and Open:\n%s\nwant\n%s", got, want)
		}
		protos, err := DecodePrototypes(files[PrototypesFile])
		if err != nil || !sameContent(b.Prototypes, protos) {
			t.Fatalf("prototypes after Write and Open differ from the written ones (%v)", err)
		}
	})
}
