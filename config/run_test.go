package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestReadRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full, err := yaml.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadRun(write("full.yaml", string(full)))
	if err != nil || len(Diff(Default(), c)) != 0 {
		t.Errorf("a complete config.yaml read back with changes %v (%v)", Diff(Default(), c), err)
	}

	// A run written before the added keys existed keeps what it did:
	// whole rotated batches, docs/method.md's Stage II, no TrivialAugment.
	var kept []string
	for _, line := range strings.Split(string(full), "\n") {
		switch strings.TrimSpace(line) {
		case "rotation_split_batch: true", "alpha: -1", "trivial_augment: false":
			continue
		}
		kept = append(kept, line)
	}
	old := strings.Join(kept, "\n")
	if len(kept) != strings.Count(string(full), "\n")+1-3 {
		t.Fatalf("test setup: the three added keys were not removed:\n%s", old)
	}
	c, err = ReadRun(write("old.yaml", old))
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(Default(), c); len(d) != 1 || d[0].Key != "train.rotation_split_batch" || c.Train.RotationSplitBatch {
		t.Errorf("old run read with changes %v, want only train.rotation_split_batch -> false", d)
	}

	for i, bad := range []struct{ text, want string }{
		{"train:\n  epochz: 3\n", "field epochz not found"},
		{"seed: 4\ntrain:\n  epochs: 7\n", "no key method: truncated"},
		{"", "empty file"},
		{"seed: [1\n", "bad.yaml"},
	} {
		if _, err := ReadRun(write("bad.yaml", bad.text)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, err, bad.want)
		}
	}
}
