package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel"
)

// TestStagedBackbone: the backbone with the pooled stages added gives the
// features backbone.onnx gives, pooled stages that are means of ReLU
// outputs (non-negative, not all zero), and a turned input that matches
// turn on the image.
func TestStagedBackbone(t *testing.T) {
	if _, err := infer.InitRuntime(""); err != nil {
		t.Skip("ONNX Runtime:", err)
	}
	m, err := testmodel.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(m.OneTask)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newStagedSession(m.OneTask, b.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	const n = 6
	var x []float32
	for i := range n {
		x = append(x, s.pre.Image(testmodel.Image(m.Test, i))...)
	}
	z, g2, g3, err := s.run(x, n)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ort.NewDynamicAdvancedSessionWithONNXData(mustRead(t, filepath.Join(m.OneTask, bundle.BackboneFile)),
		[]string{bundle.TensorImage}, []string{bundle.TensorFeatures}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Destroy()
	in, _ := ort.NewTensor(ort.NewShape(n, 1, 28, 28), x)
	defer in.Destroy()
	want := make([]float32, n*testmodel.FeatureDim)
	out, _ := ort.NewTensor(ort.NewShape(n, testmodel.FeatureDim), want)
	defer out.Destroy()
	if err := plain.Run([]ort.Value{in}, []ort.Value{out}); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(float64(z[i]-want[i])) > 1e-5 {
			t.Fatalf("feature %d: staged %v, backbone.onnx %v", i, z[i], want[i])
		}
	}
	for name, g := range map[string][]float32{"stage 2": g2, "stage 3": g3} {
		if slices.Min(g) < 0 || slices.Max(g) <= 0 {
			t.Errorf("%s: pooled ReLU outputs in [%v, %v], want non-negative, not all zero", name, slices.Min(g), slices.Max(g))
		}
	}
	img := toGray(testmodel.Image(m.Test, 0))
	for q := 1; q <= 2; q++ {
		got := turnInput(s.pre.Image(img), 1, 28, q)
		if !slices.Equal(got, s.pre.Image(turn(img, q))) {
			t.Errorf("turnInput by %d differs from turn on the image", q)
		}
	}
	if !slices.Equal(turnInput(x[:784], 1, 28, 4), x[:784]) {
		t.Error("four quarter turns are not the identity")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestKNNScores: the k-th neighbour's cosine distance, on planted unit
// vectors.
func TestKNNScores(t *testing.T) {
	// 50 references at angles 0, 1.8, 3.6, ... degrees from the query's
	// direction, shuffled: the k-th nearest is at 1.8*(k-1) degrees.
	var refs []float32
	for i := range 50 {
		a := float64(i) * math.Pi / 2 / 50
		refs = append(refs, float32(math.Cos(a)), float32(math.Sin(a)), 0)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	rng.Shuffle(50, func(i, j int) {
		for d := range 3 {
			refs[3*i+d], refs[3*j+d] = refs[3*j+d], refs[3*i+d]
		}
	})
	got := knnScores([]float32{2, 0, 0}, refs, 3)
	for i, k := range knnKs {
		want := 1 - math.Cos(float64(k-1)*math.Pi/2/50)
		if math.Abs(got[i]-want) > 1e-6 {
			t.Errorf("k=%d: %v, want %v", k, got[i], want)
		}
	}
}

// TestRotationProbe: a probe fitted on features that carry the turn
// predicts it (low loss) and is lost on features that do not.
func TestRotationProbe(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	rec := func(informative bool) nearRecord {
		var r nearRecord
		for q := range 4 {
			f := make([]float32, 6)
			for i := range f {
				f[i] = float32(rng.NormFloat64())
			}
			if informative {
				f[q] += 4
			}
			r.Z[q] = f
		}
		return r
	}
	var fit []nearRecord
	for range 200 {
		fit = append(fit, rec(true))
	}
	p := fitRotation(fit, rotationFeatures[candRotZ])
	var known, lost float64
	for range 100 {
		known += p.loss(rec(true)) / 100
		lost += p.loss(rec(false)) / 100
	}
	if known > 0.5 || lost < 4*math.Log(4)*0.8 {
		t.Errorf("mean loss %.3f on informative turns (want < 0.5), %.3f on uninformative ones (want about %.3f)", known, lost, 4*math.Log(4))
	}
}
