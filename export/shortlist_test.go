package export

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/gauss"
)

// manyClassTables returns the random convnet's features of the 10,000
// Fashion-MNIST test images and tables of k classes, class j estimated from
// 6 test images of label j mod 10 drawn by a generator seeded with j, the
// way bench/infer --classes grows a model with add-classes: k/10 classes
// share each label, so neighbouring classes are close.
func manyClassTables(t *testing.T, k int) ([]float32, gauss.ClassifierTables, []gauss.Gaussian) {
	t.Helper()
	feats, labels, _ := fashionFeatures(t, gauss.DefaultClassifierOptions())
	const s, per = 64, 6
	byLabel := make([][]int, 10)
	for i, l := range labels {
		byLabel[l] = append(byLabel[l], i)
	}
	protos := make([]gauss.Gaussian, k)
	for j := range k {
		rng := rand.New(rand.NewPCG(uint64(j), 34))
		pool := byLabel[j%10]
		var rows []float32
		for _, p := range rng.Perm(len(pool))[:per] {
			rows = append(rows, feats[pool[p]*s:(pool[p]+1)*s]...)
		}
		var err error
		if protos[j], err = gauss.Estimate(rows, per, s); err != nil {
			t.Fatalf("class %d: %v", j, err)
		}
	}
	clf, err := gauss.NewClassifier(protos, nil, gauss.DefaultClassifierOptions())
	if err != nil {
		t.Fatal(err)
	}
	return feats, clf.Tables(), protos
}

// TestShortlistMatchesExact checks the Shortlist graph against the exact
// classifier through ONNX Runtime, one image per call as a batch-1 answer
// is made, on 1000 classes grown as bench/infer grows them, for 2000 of
// the test images: the shortlisted scores are the exact graph's scores of
// those classes, and a shortlist of every class gives the exact top-5 on
// every image. A shortlist of 128 is only logged: on this random network's
// features the scores are about 1e-6 apart, below the int8 table's
// resolution, and it kept the exact top-1 on about half the images (on a
// trained network's features bench/infer --shortlist measures it;
// docs/classes.md).
func TestShortlistMatchesExact(t *testing.T) {
	if testing.Short() {
		t.Skip("1000 classes, 4000 single-image calls")
	}
	const k, s = 1000, 64
	feats, tables, _ := manyClassTables(t, k)
	images := len(feats) / s
	exactModel, err := classgraph.Classifier(tables)
	if err != nil {
		t.Fatal(err)
	}
	exact := runModel(t, exactModel, []string{bundle.TensorFeatures}, [][]float32{feats}, [][]int64{{int64(images), s}},
		[]string{bundle.TensorScores})[0].([]float32)
	for _, n := range []int{128, k} {
		model, err := classgraph.Shortlist(tables, n)
		if err != nil {
			t.Fatal(err)
		}
		sess := newShortlistSession(t, model)
		top1, top5, checked := 0, 0, 0
		var worst float64
		for i := 0; i < images; i += 5 {
			checked++
			scores, classes := runShortlist(t, sess, feats[i*s:(i+1)*s], n)
			row := exact[i*k : (i+1)*k]
			scale := 0.0
			for _, v := range row {
				scale = max(scale, math.Abs(float64(v)))
			}
			for j, c := range classes {
				worst = max(worst, math.Abs(float64(scores[j])-float64(row[c]))/scale)
			}
			want, got := bestOf(row, 5, nil), bestOf(scores, 5, classes)
			if want[0] == got[0] {
				top1++
			}
			if slices.Equal(want, got) {
				top5++
			}
		}
		sess.Destroy()
		t.Logf("%d classes, shortlist of %d: top-1 equal on %d of %d images, top-5 lists on %d; shortlisted scores within %.3g of the exact ones (relative to each image's largest score)",
			k, n, top1, checked, top5, worst)
		if worst > 1e-4 {
			t.Errorf("shortlist of %d: shortlisted scores differ from the exact graph's by %.3g relative, want <= 1e-4", n, worst)
		}
		if n == k && top5 != checked {
			t.Errorf("shortlist of every class: top-5 equals the exact one on %d of %d images, want all", top5, checked)
		}
	}
}

// separatedGaussians returns k Gaussians in s dimensions with means drawn
// from N(0, I) and covariances B B^T / s + I/4: classes that a feature
// drawn from one of them is nearly always closest to, as on a trained
// network's features.
func separatedGaussians(rng *rand.Rand, k, s int) []gauss.Gaussian {
	out := make([]gauss.Gaussian, k)
	for c := range out {
		mean := make([]float64, s)
		for i := range mean {
			mean[i] = rng.NormFloat64()
		}
		b := mat.NewDense(s, s, nil)
		for i := range s {
			for j := range s {
				b.Set(i, j, rng.NormFloat64())
			}
		}
		cov := mat.NewSymDense(s, nil)
		cov.SymOuterK(1/float64(s), b)
		for i := range s {
			cov.SetSym(i, i, cov.At(i, i)+0.25)
		}
		out[c] = gauss.Gaussian{Mean: mean, Cov: cov}
	}
	return out
}

// TestPlanShortlist checks the shortlist check that decides whether a
// model directory gets a shortlist: on separated classes it adopts the
// asked size, its Go replay of the int8 scores (ShortlistRanks) ranks
// each feature's exact closest class as the graph run by ONNX Runtime
// does, and the graph keeps the exact closest class of fresh features as
// often as the check said; on the random network's features, which the
// int8 table cannot rank (TestShortlistMatchesExact), it refuses every
// size, so such a model keeps exact scores.
func TestPlanShortlist(t *testing.T) {
	if testing.Short() {
		t.Skip("1000 classes, two shortlist checks")
	}
	const k, s, n = 1000, 64, 128
	rng := rand.New(rand.NewPCG(34, 6))
	protos := separatedGaussians(rng, k, s)
	clf, err := gauss.NewClassifier(protos, nil, gauss.DefaultClassifierOptions())
	if err != nil {
		t.Fatal(err)
	}
	tables := clf.Tables()
	plan, err := classgraph.PlanShortlist(tables, protos, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("separated classes: %+v", *plan)
	if plan.Size != n || plan.CheckSamples != classgraph.ShortlistCheckSamples || plan.CheckTop1 < classgraph.ShortlistCheckTop1 {
		t.Errorf("separated classes: plan %+v, want size %d from %d samples keeping >= %v", *plan, n, classgraph.ShortlistCheckSamples, classgraph.ShortlistCheckTop1)
	}

	// Fresh features, 2 per class for 250 classes, through both graphs.
	var z []float32
	for c := 0; c < k; c += 4 {
		x, err := protos[c].Sample(rng, 2)
		if err != nil {
			t.Fatal(err)
		}
		z = append(z, x...)
	}
	m := len(z) / s
	exactModel, err := classgraph.Classifier(tables)
	if err != nil {
		t.Fatal(err)
	}
	shortModel, err := classgraph.Shortlist(tables, n)
	if err != nil {
		t.Fatal(err)
	}
	shape := [][]int64{{int64(m), s}}
	exact := runModel(t, exactModel, []string{bundle.TensorFeatures}, [][]float32{z}, shape, []string{bundle.TensorScores})[0].([]float32)
	out := runModel(t, shortModel, []string{bundle.TensorFeatures}, [][]float32{z}, shape,
		[]string{bundle.TensorShortlistClasses, bundle.TensorApproximateScores})
	classes, approx := out[0].([]int64), out[1].([]float32)
	ranks := classgraph.ShortlistRanks(tables, z)
	kept, sameVerdict := 0, 0
	for i := range m {
		best := bestOf(exact[i*k:(i+1)*k], 1, nil)[0]
		if slices.Contains(classes[i*n:(i+1)*n], best) {
			kept++
		}
		graphRank := 0
		for c, v := range approx[i*k : (i+1)*k] {
			if int64(c) != best && v < approx[i*k+int(best)] {
				graphRank++
			}
		}
		if (graphRank < n) == (ranks[i] < n) {
			sameVerdict++
		}
	}
	t.Logf("separated classes, %d fresh features: the graph's shortlist of %d keeps the exact closest class of %d; Go's replay and the graph agree on %d", m, n, kept, sameVerdict)
	// Measured: all 500 kept and all 500 verdicts equal; the bars leave
	// one image in 100 to rounding between the replay and ONNX Runtime.
	if kept < m*99/100 || sameVerdict < m*99/100 {
		t.Errorf("separated classes: shortlist kept the exact closest class of %d of %d features and the replay agreed on %d, want >= 99 %% each", kept, m, sameVerdict)
	}

	_, randomNet, randomProtos := manyClassTables(t, k)
	refused, err := classgraph.PlanShortlist(randomNet, randomProtos, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("random network's features: %+v", *refused)
	if refused.Size != 0 || refused.CheckTop1 >= classgraph.ShortlistCheckTop1 {
		t.Errorf("random network's features: plan %+v, want size 0 (refused)", *refused)
	}
}

// TestShortlistRejectsBadSizes checks classgraph.Shortlist's errors.
func TestShortlistRejectsBadSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	if _, err := classgraph.Shortlist(randomTables(rng, classgraph.ExpandedMinClasses-1, 8, true), 4); !errors.Is(err, classgraph.ErrTables) {
		t.Errorf("%d classes: got %v, want classgraph.ErrTables", classgraph.ExpandedMinClasses-1, err)
	}
	if _, err := classgraph.Shortlist(randomTables(rng, classgraph.ExpandedMinClasses, 8, true), 0); !errors.Is(err, classgraph.ErrTables) {
		t.Errorf("shortlist of 0: got %v, want classgraph.ErrTables", err)
	}
}

// newShortlistSession opens a Shortlist graph on one thread.
func newShortlistSession(t testing.TB, model []byte) *ort.DynamicAdvancedSession {
	t.Helper()
	requireRuntime(t)
	opts, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		t.Fatal(err)
	}
	sess, err := ort.NewDynamicAdvancedSessionWithONNXData(model, []string{bundle.TensorFeatures},
		[]string{bundle.TensorShortlistScores, bundle.TensorShortlistClasses}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// runShortlist scores one feature row.
func runShortlist(t testing.TB, sess *ort.DynamicAdvancedSession, z []float32, n int) ([]float32, []int64) {
	t.Helper()
	x, err := ort.NewTensor(ort.NewShape(1, int64(len(z))), z)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Destroy()
	scores, err := ort.NewEmptyTensor[float32](ort.NewShape(1, int64(n)))
	if err != nil {
		t.Fatal(err)
	}
	defer scores.Destroy()
	classes, err := ort.NewEmptyTensor[int64](ort.NewShape(1, int64(n)))
	if err != nil {
		t.Fatal(err)
	}
	defer classes.Destroy()
	if err := sess.Run([]ort.Value{x}, []ort.Value{scores, classes}); err != nil {
		t.Fatal(err)
	}
	return slices.Clone(scores.GetData()), slices.Clone(classes.GetData())
}

// bestOf returns the classes of the k smallest scores, best first (ties
// by class); classes maps positions to classes (nil: the position).
func bestOf(scores []float32, k int, classes []int64) []int64 {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	class := func(i int) int64 {
		if classes == nil {
			return int64(i)
		}
		return classes[i]
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if scores[a] != scores[b] {
			if scores[a] < scores[b] {
				return -1
			}
			return 1
		}
		return int(class(a) - class(b))
	})
	out := make([]int64, min(k, len(idx)))
	for i := range out {
		out[i] = class(idx[i])
	}
	return out
}

// TestShortlistPassesONNXChecker runs onnx.checker (full check, shape
// inference included) on a shortlist graph, as on every graph bicyc writes.
func TestShortlistPassesONNXChecker(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	model, err := classgraph.Shortlist(randomTables(rng, classgraph.ExpandedMinClasses, 8, true), 16)
	if err != nil {
		t.Fatal(err)
	}
	checkONNX(t, map[string][]byte{"shortlist.onnx": model})
}

// BenchmarkShortlistStage runs the classifier stage alone at batch 1 and
// 5000 classes (S = 64) on one ONNX Runtime thread: the exact
// classifier.onnx and shortlists of 1 and 128 classes, each reporting CPU
// microseconds per call (the tables are random: speed does not depend on
// their values; bench/infer --shortlist measures agreement on a trained
// model).
//
//	go test ./export -run '^$' -bench ShortlistStage -benchtime 300x
func BenchmarkShortlistStage(b *testing.B) {
	const k, s = 5000, 64
	rng := rand.New(rand.NewPCG(7, 8))
	tables := randomTables(rng, k, s, true)
	in := make([]float32, s)
	for i := range in {
		in[i] = float32(rng.NormFloat64())
	}
	exact, err := classgraph.Classifier(tables)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("exact", func(b *testing.B) {
		sess := newBenchSession(b, exact, bundle.TensorFeatures)
		defer sess.close()
		sess.run(b, in, 1, s, k)
		cpu := cpuSeconds(b)
		for b.Loop() {
			sess.run(b, in, 1, s, k)
		}
		b.ReportMetric((cpuSeconds(b)-cpu)/float64(b.N)*1e6, "cpu-us/op")
	})
	for _, n := range []int{1, 128} {
		model, err := classgraph.Shortlist(tables, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("shortlist-%d", n), func(b *testing.B) {
			sess := newShortlistSession(b, model)
			defer sess.Destroy()
			runShortlist(b, sess, in, n)
			cpu := cpuSeconds(b)
			for b.Loop() {
				runShortlist(b, sess, in, n)
			}
			b.ReportMetric((cpuSeconds(b)-cpu)/float64(b.N)*1e6, "cpu-us/op")
		})
	}
}
