package config

import (
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	a := Default()
	if d := Diff(a, a); len(d) != 0 {
		t.Fatalf("Diff of a config with itself: %v", d)
	}
	b := a
	b.Method = MethodFinetune
	b.Train.Milestones = []float64{0.5}
	b.Adapter.Alpha = 0
	want := []Change{
		{"method", `"bicyc"`, `"finetune"`},
		{"train.milestones", "[0.3, 0.6, 0.9]", "[0.5]"},
		{"adapter.alpha", "-1", "0"},
	}
	if d := Diff(a, b); !slices.Equal(d, want) {
		t.Fatalf("Diff = %v, want %v", d, want)
	}
	if s := want[2].String(); s != "adapter.alpha: -1 -> 0" {
		t.Errorf("Change.String() = %q", s)
	}
	b = a
	b.Stream.ClassOrder = []int{}
	if d := Diff(a, b); len(d) != 0 {
		t.Fatalf("nil and empty class_order differ: %v", d)
	}
}
