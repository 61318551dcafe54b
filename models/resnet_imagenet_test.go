package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"gorgonia.org/tensor"
)

func mustBackboneWidth(t testing.TB, a arch.Backbone, width, c, s int, seed uint64) *Backbone {
	t.Helper()
	b, err := NewBackboneWidth(a, width, c, s, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestResNet18ImageNetShapes(t *testing.T) {
	b := mustBackbone(t, arch.ResNet18ImageNet, 3, 64, 1)
	// torchvision's resnet18 has 11,689,512 parameters; fc is 512*1000 + 1000 of them; reduce adds 512*64 + 64.
	if got, want := b.NumParams(), 11689512-513000+32832; got != want {
		t.Errorf("NumParams %d, want %d", got, want)
	}
	shapes := stateShapes(b.State())
	if len(shapes) != 102 || shapes["conv1.weight"] != "[64 3 7 7]" || shapes["layer4.1.bn2.running_var"] != "[512]" {
		t.Errorf("%d state tensors, conv1.weight %s, layer4.1.bn2.running_var %s", len(shapes), shapes["conv1.weight"], shapes["layer4.1.bn2.running_var"])
	}
	// Any input size: 64x64 and a non-square 40x56 (stem 20x28, pool 10x14, ... layer4 2x1).
	rng := rand.New(rand.NewPCG(2, 3))
	narrow := mustBackboneWidth(t, arch.ResNet18ImageNet, 8, 3, 16, 4)
	for i, x := range []*tensor.Dense{randomImages(rng, 1, 3, 64, 64), randomImages(rng, 2, 3, 40, 56)} {
		r := buildBackboneRun(t, narrow, x.Shape(), false, false)
		got := r.run(t, x)
		r.vm.Close()
		if s := r.out.Output.Shape(); !s.Eq(tensor.Shape{x.Shape()[0], 16}) {
			t.Errorf("case %d: output shape %v", i, s)
		}
		for j, v := range got {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("case %d: feature %d is %v", i, j, v)
			}
		}
	}
	if narrow.Width() != 8 || stateShapes(narrow.State())["layer4.0.downsample.0.weight"] != "[64 32 1 1]" {
		t.Errorf("width %d, layer4 downsample %s", narrow.Width(), stateShapes(narrow.State())["layer4.0.downsample.0.weight"])
	}
}

// TestFreezeStages trains a backbone with its stem and layer1 frozen: their weights and BN running statistics
// stay exactly as they were, while layer2's change.
func TestFreezeStages(t *testing.T) {
	b := mustBackboneWidth(t, arch.ResNet18ImageNet, 8, 3, 16, 8)
	all := b.NumParams()
	if err := b.FreezeStages(2); err != nil {
		t.Fatal(err)
	}
	// 20 conv-BN units of 3 tensors and reduce's 2, less the 5 units of the stem and layer1.
	if b.NumParams() >= all || len(b.Params()) != 62-15 {
		t.Errorf("frozen: %d of %d trainable values in %d tensors", b.NumParams(), all, len(b.Params()))
	}
	before := stateShapesData(b.State())
	trainStep(t, b, randomImages(rand.New(rand.NewPCG(9, 1)), 2, 3, 32, 32))
	after := stateShapesData(b.State())
	for name := range before {
		frozen := name == "conv1.weight" || name[:3] == "bn1" || len(name) > 7 && name[:7] == "layer1."
		if same := slices.Equal(before[name], after[name]); same != frozen {
			t.Errorf("%s: unchanged %t after a training step, frozen %t", name, same, frozen)
		}
	}
	if c := b.Clone(); c.FrozenStages() != 2 {
		t.Errorf("clone has %d frozen stages", c.FrozenStages())
	}
	for _, n := range []int{-1, 6} {
		if err := b.FreezeStages(n); err == nil {
			t.Errorf("FreezeStages(%d) accepted", n)
		}
	}
}

// TestFrozenStagesBuildNoInputGradient checks that with only layer4 and the reduction trainable the graph
// holds the input gradients of the convolutions back-propagation passes through (layer4.0.conv2, layer4.1's
// two, the reduction) and not those of layer4.0.conv1 and its downsample, whose inputs come from frozen
// stages: gorgonia would run them in every step and discard them.
func TestFrozenStagesBuildNoInputGradient(t *testing.T) {
	for frozen, want := range map[int]int{4: 4, 0: 20} {
		b := mustBackboneWidth(t, arch.ResNet18ImageNet, 4, 3, 8, 8)
		if err := b.FreezeStages(frozen); err != nil {
			t.Fatal(err)
		}
		r := buildBackboneRun(t, b, tensor.Shape{2, 3, 32, 32}, true, true)
		got := 0
		for _, n := range r.g.AllNodes() {
			if n.Op() != nil && strings.HasPrefix(n.Op().String(), "Conv2dInputGrad") {
				got++
			}
		}
		r.vm.Close()
		// All trainable: the 21 convolutions but the stem, whose input is the images.
		if got != want {
			t.Errorf("%d frozen stages: %d input-gradient convolutions in the graph, want %d", frozen, got, want)
		}
	}
}
