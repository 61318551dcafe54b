package bundle

import (
	"bytes"
	"encoding/json"
	"image"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/arch"
)

// TestManifestBeforeResizeMode decodes, as Open does, a manifest.json that
// bicyc wrote before preprocessing had a resize mode (a real export of a
// Fashion-MNIST model; only its config's run_dir was shortened): it is
// valid, has no mode, and preprocesses a non-square image exactly as an
// explicit squash does, which is what those models were trained with.
func TestManifestBeforeResizeMode(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "manifest-before-resize-mode.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("resize_mode")) {
		t.Fatal("the fixture must predate resize_mode")
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	upgradeManifest(&m) // schema version 1: tasks from 0
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	p := m.Preprocess
	if p.ResizeMode != "" || p.ResizeShorter != 0 || p.Height != 28 || p.Channels != 1 {
		t.Fatalf("old preprocessing read as %+v", p)
	}
	img := image.NewGray(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 13)
	}
	squash := p
	squash.ResizeMode = arch.Squash
	if !slices.Equal(p.Pixels(img), squash.Pixels(img)) {
		t.Error("an old manifest does not squash")
	}
	crop := p
	crop.ResizeMode, crop.ResizeShorter = arch.CenterCrop, 32
	if slices.Equal(p.Pixels(img), crop.Pixels(img)) {
		t.Error("squash and center crop agree on a 40x30 image: the test image shows nothing")
	}
}
