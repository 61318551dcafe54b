package models

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/safetensors"
)

// TestCombinedCheckpoint stores a backbone, a head and a mapper in one file with WithPrefix, and restores them
// with TrimPrefix and a Linear state prefix.
func TestCombinedCheckpoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := mustBackbone(t, arch.ConvNet, 1, 8, 3)
	head := NewLinear(8, 10, true, rng)
	adapter, err := NewMapper(arch.MLP, 8, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	var all []safetensors.Tensor
	all = append(all, WithPrefix("backbone.", b.State())...)
	all = append(all, head.State("head.0.")...)
	all = append(all, WithPrefix("adapter.", adapter.State())...)
	path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
	if err := safetensors.WriteFile(path, all, nil); err != nil {
		t.Fatal(err)
	}
	read, _, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	b2 := mustBackbone(t, arch.ConvNet, 1, 8, 4)
	head2 := NewLinear(8, 10, true, rng)
	adapter2, err := NewMapper(arch.MLP, 8, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		err  error
		got  any
		want any
	}{
		{"backbone", b2.SetState(trimPrefix("backbone.", read)), b2.State(), b.State()},
		{"head", head2.SetState("head.0.", read), head2.State(""), head.State("")},
		{"adapter", adapter2.SetState(trimPrefix("adapter.", read)), adapter2.State(), adapter.State()},
	}
	for i, s := range steps {
		if s.err != nil {
			t.Errorf("case %d %s: %v", i, s.name, s.err)
			continue
		}
		if fmt.Sprint(s.got) != fmt.Sprint(s.want) {
			t.Errorf("case %d %s: restored state differs", i, s.name)
		}
	}
}
