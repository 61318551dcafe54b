package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/safetensors"
)

// testPrototypes returns K=3 prototypes in S=2 dims with distinct values.
func testPrototypes() Prototypes {
	const k, s = 3, 2
	p := Prototypes{K: k, S: s, Means: make([]float32, k*s), Covariances: make([]float32, k*PackedDim(s)),
		Bias: []float32{0.5, -1, 2}, Normalize: true}
	for i := range p.Means {
		p.Means[i] = float32(i) + 0.25
	}
	for i := range p.Covariances {
		p.Covariances[i] = float32(i%4) - 1.5
	}
	return p
}

// testModel returns a valid manifest and file set for two tasks of
// Fashion-MNIST-like classes. The ONNX files are stand-in bytes: this
// package only stores and verifies them (package export's tests write real
// ones).
func testModel(t *testing.T) (*Manifest, map[string][]byte) {
	t.Helper()
	protos, err := testPrototypes().Encode()
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{
		BicycVersion:      "v0.0.0-test",
		CreatedAt:         time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC),
		MinRuntimeVersion: MinRuntimeVersion,
		Backbone:          "convnet",
		FeatureDim:        2,
		Adapter:           "mlp",
		Classifier:        gauss.ClassifierOptions{Normalize: true, Shrink: 3, TopK: 3},
		Preprocess: imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: []float32{0.286}, Std: []float32{0.353},
			Resize: "catmull-rom"},
		Classes: []Class{{ID: 0, Name: "T-shirt/top", Task: 1}, {ID: 1, Name: "Trouser", Task: 1}, {ID: 7, Name: "Sneaker", Task: 2}},
		Tasks:   [][]int{{0, 1}, {7}},
		Config:  json.RawMessage(`{"epochs":2}`),
		Metrics: json.RawMessage(`{"a_last":0.5}`),
	}
	files := map[string][]byte{
		BackboneFile:   []byte("backbone bytes"),
		AdapterFile:    []byte("adapter bytes"),
		ClassifierFile: []byte("classifier bytes"),
		ModelFile:      []byte("model bytes"),
		PrototypesFile: protos,
	}
	return m, files
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// siblings lists the entries of dir's parent other than dir itself, to
// catch temporary directories left behind.
func siblings(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != filepath.Base(dir) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteOpenRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "models", "fmnist")
	m, files := testModel(t)
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Manifest; got.SchemaVersion != SchemaVersion || got.Backbone != "convnet" || !got.CreatedAt.Equal(m.CreatedAt) ||
		!slices.Equal(got.Classes, m.Classes) || len(got.Tasks) != 2 || !slices.Equal(got.Tasks[1], []int{7}) ||
		!reflect.DeepEqual(got.Classifier, m.Classifier) || compactJSON(t, got.Config) != `{"epochs":2}` || compactJSON(t, got.Metrics) != `{"a_last":0.5}` ||
		got.Preprocess.Resize != "catmull-rom" || len(got.Files) != len(files) {
		t.Fatalf("manifest after round trip:\n%+v\nwant\n%+v", got, *m)
	}
	want := testPrototypes()
	if p := b.Prototypes; p.K != want.K || p.S != want.S || !slices.Equal(p.Means, want.Means) ||
		!slices.Equal(p.Covariances, want.Covariances) || !slices.Equal(p.Bias, want.Bias) || !p.Normalize {
		t.Fatalf("prototypes after round trip: %+v, want %+v", p, want)
	}
	for name, content := range files {
		got, err := b.ReadFile(name)
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", name, got, err, content)
		}
		sum := sha256.Sum256(content)
		if f := b.Manifest.Files[name]; f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != int64(len(content)) {
			t.Errorf("manifest entry of %s is %+v", name, f)
		}
	}
	if !b.Has(AdapterFile) || b.Path(ModelFile) != filepath.Join(dir, ModelFile) {
		t.Errorf("Has(adapter) = %v, Path(model) = %s", b.Has(AdapterFile), b.Path(ModelFile))
	}
	if left := siblings(t, dir); len(left) != 0 {
		t.Errorf("temporary entries left beside the model: %v", left)
	}
}

func TestWriteReplacesPreviousModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model")
	m, files := testModel(t)
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	m2, files2 := testModel(t)
	m2.Adapter = ""
	delete(files2, AdapterFile)
	files2[ModelFile] = []byte("model bytes, version 2")
	if err := Write(dir, m2, files2); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.ReadFile(ModelFile)
	if err != nil || string(got) != "model bytes, version 2" {
		t.Fatalf("model.onnx after replace = %q, %v", got, err)
	}
	if b.Has(AdapterFile) {
		t.Error("the replaced model still lists adapter.onnx")
	}
	if _, err := os.Stat(filepath.Join(dir, AdapterFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("adapter.onnx of the old model is still in the directory: %v", err)
	}
	if left := siblings(t, dir); len(left) != 0 {
		t.Errorf("temporary entries left beside the model: %v", left)
	}
}

func TestFailedWriteKeepsPreviousModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model")
	m, files := testModel(t)
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	nan := testPrototypes()
	nan.Means[1] = float32(math.NaN())
	for i, tc := range []struct {
		edit func(*Manifest, map[string][]byte)
		want string
	}{
		{func(_ *Manifest, f map[string][]byte) { f["../escape"] = []byte("x") }, `file name "../escape" is not a plain file name`},
		{func(_ *Manifest, f map[string][]byte) { delete(f, ModelFile) }, "files has no model.onnx"},
		{func(m *Manifest, _ map[string][]byte) { m.Classes = m.Classes[:2] }, "the task stream has 3 classes, classes has 2"},
		{func(_ *Manifest, f map[string][]byte) { f[PrototypesFile] = f[PrototypesFile][:40] }, "prototypes.safetensors"},
		{func(m *Manifest, _ map[string][]byte) { m.FeatureDim = 3 }, "3 prototypes of dim 2, but the manifest has 3 classes of dim 3"},
		{func(m *Manifest, _ map[string][]byte) { m.Preprocess.Std = []float32{0} }, "std[0] = 0, want a finite value > 0"},
	} {
		m, files := testModel(t)
		tc.edit(m, files)
		err := Write(dir, m, files)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, err, tc.want)
		}
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("previous model damaged by failed writes: %v", err)
	}
	if left := siblings(t, dir); len(left) != 0 {
		t.Errorf("temporary entries left beside the model: %v", left)
	}
	// A crash in the middle of a Write leaves a hidden ".model.new-*"
	// directory; the model at dir is unaffected.
	if err := os.Mkdir(filepath.Join(filepath.Dir(dir), ".model.new-123"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("open beside a crashed write's leftovers: %v", err)
	}
}

func TestWriteRefusesToReplaceOtherData(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, files := testModel(t)
	err := Write(dir, m, files)
	if err == nil || !strings.Contains(err.Error(), "refusing to replace a non-empty directory") {
		t.Fatalf("Write over a directory of other files: %v", err)
	}
	if b, err := os.ReadFile(precious); err != nil || string(b) != "keep me" {
		t.Fatalf("other data damaged: %q, %v", b, err)
	}
}

// rewriteManifest decodes dir's manifest as generic JSON, applies edit,
// writes it back and seals it (SealManifest), so that what Open sees is
// the edit, not a digest mismatch.
func rewriteManifest(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	editManifest(t, dir, edit)
	if err := SealManifest(dir); err != nil {
		t.Fatal(err)
	}
}

// editManifest rewrites dir's manifest through edit, without sealing it.
func editManifest(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, ManifestFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceFile writes content to a file of dir and updates its manifest
// entry, so that the content itself, not the checksum, is what is wrong.
func replaceFile(t *testing.T, dir, name string, content []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	rewriteManifest(t, dir, func(m map[string]any) {
		m["files"].(map[string]any)[name] = map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": len(content)}
	})
}

func TestOpenRejectsDamagedModels(t *testing.T) {
	nanProtos := testPrototypes()
	nanProtos.Covariances[5] = float32(math.NaN())
	var nanBytes bytes.Buffer
	if err := safetensors.Write(&nanBytes, nanProtos.tensors(), map[string]string{metadataNormalize: "true"}); err != nil {
		t.Fatal(err)
	}
	for i, tc := range damagedModelCases(nanBytes.Bytes()) {
		dir := filepath.Join(t.TempDir(), "model")
		m, files := testModel(t)
		if err := Write(dir, m, files); err != nil {
			t.Fatal(err)
		}
		tc.damage(t, dir)
		_, err := Open(dir)
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: Open error\n  %v\nwant %v containing %q", i, err, tc.sentinel, tc.want)
		}
	}
}

// damageCase damages a written model directory; Open must then fail with
// sentinel and a message containing want.
type damageCase struct {
	damage   func(t *testing.T, dir string)
	sentinel error
	want     string
}

// damagedModelCases are TestOpenRejectsDamagedModels' damages; nanBytes
// is a prototypes file with a NaN covariance.
func damagedModelCases(nanBytes []byte) []damageCase {
	return []damageCase{
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) { m["schema_version"] = SchemaVersion + 1 })
		}, ErrSchemaVersion, "manifest.json: unsupported manifest schema version: schema_version 7, this build reads 1 to 6"},
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) { delete(m, "schema_version") })
		}, ErrSchemaVersion, "schema_version none"},
		{func(t *testing.T, dir string) {
			raw, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
			os.WriteFile(filepath.Join(dir, ManifestFile), raw[:len(raw)/2], 0o644)
		}, ErrManifest, "manifest.json: invalid manifest: unexpected end of JSON input"},
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) { m["feature_dimension"] = 64 })
		}, ErrManifest, `unknown field "feature_dimension"`},
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) {
				m["files"].(map[string]any)["../../etc/passwd"] = map[string]any{"sha256": strings.Repeat("0", 64), "size": 1}
			})
		}, ErrManifest, `file name "../../etc/passwd" is not a plain file name`},
		{func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ManifestFile)) }, ErrMissingFile, "manifest.json: missing model file"},
		{func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ModelFile)) }, ErrMissingFile, "model.onnx: missing model file"},
		{func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ClassifierFile), []byte("classifier bytez"), 0o644)
		}, ErrChecksum, "classifier.onnx: model file checksum mismatch: sha256"},
		{func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, BackboneFile), []byte("backbone bytes and more"), 0o644)
		}, ErrChecksum, "backbone.onnx: model file checksum mismatch: larger than the 14 bytes"},
		{func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, AdapterFile), []byte("adapter"), 0o644)
		}, ErrChecksum, "adapter.onnx: model file checksum mismatch: 7 bytes, the manifest says 13"},
		{func(t *testing.T, dir string) {
			raw, _ := os.ReadFile(filepath.Join(dir, PrototypesFile))
			replaceFile(t, dir, PrototypesFile, raw[:len(raw)-9])
		}, safetensors.ErrFormat, "prototypes.safetensors: invalid prototypes: malformed safetensors data"},
		{func(t *testing.T, dir string) { replaceFile(t, dir, PrototypesFile, nanBytes) },
			ErrPrototypes, `tensor "covariances_upper" has non-finite value NaN at index 5`},
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) { m["classifier"].(map[string]any)["normalize"] = false })
		}, ErrPrototypes, "tables have normalize=true, the manifest's classifier says false"},
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) {
				m["shortlist"] = map[string]any{"size": 1, "check_samples": 10, "check_top1": 1}
			})
		}, ErrManifest, "shortlist of 1 classes but shortlist.onnx listed: false"},
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) {
				m["files"].(map[string]any)[ShortlistFile] = map[string]any{"sha256": strings.Repeat("0", 64), "size": 1}
			})
		}, ErrManifest, "shortlist of 0 classes but shortlist.onnx listed: true"},
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) {
				m["shortlist"] = map[string]any{"size": 0, "check_samples": 10, "check_top1": 1.5}
			})
		}, ErrManifest, "shortlist size 0, check of 10 samples, top-1 1.5"},
		{func(t *testing.T, dir string) {
			rewriteManifest(t, dir, func(m map[string]any) { m["classifier"].(map[string]any)["shortlist"] = -0.5 })
		}, ErrManifest, "classifier shortlist -0.5, want a value in [0, 1]"},
	}
}

func TestDecodePrototypesRejectsBadTensors(t *testing.T) {
	good := testPrototypes()
	for i, tc := range []struct {
		tensors []safetensors.Tensor
		meta    map[string]string
		want    string
	}{
		{good.tensors()[1:], map[string]string{metadataNormalize: "true"}, `tensor "means" missing or not [K,S]`},
		{slices.Delete(good.tensors(), 2, 3), map[string]string{metadataNormalize: "true"}, `tensor "classifier.bias" is missing`},
		{append(good.tensors()[:1:1], safetensors.Tensor{Name: tensorCovariances, Shape: []int{3, 4}, Data: make([]float32, 12)}),
			map[string]string{metadataNormalize: "true"}, `tensor "covariances_upper" has shape [3 4], want [3 3]`},
		{append(good.tensors()[:1:1], safetensors.Tensor{Name: tensorCovariancesFull, Shape: []int{3, 2, 3}, Data: make([]float32, 18)}),
			map[string]string{metadataNormalize: "true"}, `tensor "covariances" has shape [3 2 3], want [3 2 2]`},
		{good.tensors(), map[string]string{metadataNormalize: "yes"}, `metadata "classifier.normalize" is "yes"`},
	} {
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, tc.tensors, tc.meta); err != nil {
			t.Fatal(err)
		}
		_, err := DecodePrototypes(buf.Bytes())
		if !errors.Is(err, ErrPrototypes) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want ErrPrototypes containing %q", i, err, tc.want)
		}
	}
}

// TestWriteRecoversFromInterruptedWrite recreates what a crash leaves:
// a half-written ".model.new-*" and, with dir missing, the previous model in
// ".model.old-*/model" (the crash window of the two-rename fallback). The
// previous model must be restored when the next Write fails, and replaced
// when it succeeds, with no litter left either way.
func TestWriteRecoversFromInterruptedWrite(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "model")
	m, files := testModel(t)
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	holder := filepath.Join(parent, ".model.old-123")
	if err := os.MkdirAll(holder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, filepath.Join(holder, "model")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(parent, ".model.new-456"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad, badFiles := testModel(t)
	bad.FeatureDim = 0
	if err := Write(dir, bad, badFiles); err == nil {
		t.Fatal("an invalid manifest was written")
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("the previous model was not restored: %v", err)
	}
	if left := siblings(t, dir); len(left) != 0 {
		t.Errorf("litter left beside the model: %v", left)
	}
}

// TestOpenVerifiesManifestDigest changes one preprocessing mean in
// manifest.json, the edit that silently changed every prediction before
// the digest existed: Open refuses it as a checksum mismatch naming the
// manifest. A damaged digest file is refused too; a deliberate edit sealed
// with SealManifest opens; a directory without a digest (written by an
// older bicyc) opens with ManifestVerified false.
func TestOpenVerifiesManifestDigest(t *testing.T) {
	m, files := testModel(t)
	dir := filepath.Join(t.TempDir(), "model")
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir)
	if err != nil || !b.ManifestVerified {
		t.Fatalf("fresh model: verified %v, %v", b != nil && b.ManifestVerified, err)
	}
	digest, err := os.ReadFile(filepath.Join(dir, DigestFile))
	if err != nil || len(digest) != 64+2+len(ManifestFile)+1 || !strings.HasSuffix(string(digest), "  manifest.json\n") {
		t.Fatalf("digest file %q, %v: want sha256sum's format", digest, err)
	}
	changeMean := func(m map[string]any) { m["preprocess"].(map[string]any)["mean"] = []float64{0.9} }
	cases := []struct {
		damage func()
		want   string // "" for Open to succeed
	}{
		{func() { editManifest(t, dir, changeMean) }, "manifest.json: model file checksum mismatch: sha256 "},
		{func() { os.WriteFile(filepath.Join(dir, DigestFile), []byte("deadbeef\n"), 0o644) }, "manifest.sha256: model file checksum mismatch: want one line"},
		{func() { rewriteManifest(t, dir, changeMean) }, ""},
	}
	for i, c := range cases {
		c.damage()
		_, err := Open(dir)
		if c.want == "" && err != nil || c.want != "" && (!errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("case %d: Open error %v, want %q", i, err, c.want)
		}
	}
	if err := os.Remove(filepath.Join(dir, DigestFile)); err != nil {
		t.Fatal(err)
	}
	if b, err := Open(dir); err != nil || b.ManifestVerified {
		t.Errorf("without a digest file: %v, verified %v; want it to open unverified", err, b != nil && b.ManifestVerified)
	}
}

// TestOpenRefusesSpecialFiles replaces the manifest, and then a model
// file, with a named pipe that nobody writes to: Open refuses each at
// once, naming it, instead of blocking.
func TestOpenRefusesSpecialFiles(t *testing.T) {
	m, files := testModel(t)
	for i, name := range []string{ManifestFile, ModelFile} {
		dir := filepath.Join(t.TempDir(), "model")
		if err := Write(dir, m, files); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		os.Remove(path)
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Skip("no named pipes here:", err)
		}
		done := make(chan error, 1)
		go func() { _, err := Open(dir); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, bounded.ErrNotRegular) || !strings.Contains(err.Error(), path) {
				t.Errorf("case %d: %v, want ErrNotRegular naming %s", i, err, path)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("case %d: Open blocks on a named pipe as %s", i, name)
		}
	}
}
