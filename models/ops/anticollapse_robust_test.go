package ops

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// pooledFashion returns the first n Fashion-MNIST training images as
// features [n, 49]: the means of their 4x4 pixel blocks, in [0, 1].
func pooledFashion(t *testing.T, n int) [][]float64 {
	t.Helper()
	images, _, err := readFashion(n)
	if err != nil {
		t.Fatalf("fashion-mnist: %v", err)
	}
	rows := make([][]float64, n)
	for i := range rows {
		img := images[i*784 : (i+1)*784]
		rows[i] = make([]float64, 49)
		for p := range 784 {
			rows[i][(p/28/4)*7+(p%28)/4] += float64(img[p]) / 16
		}
	}
	return rows
}

// featureMatrix stacks rows into a float64 [len(rows), S] tensor.
func featureMatrix(rows [][]float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(rows), len(rows[0])), tensor.WithBacking(slices.Concat(rows...)))
}

// antiCollapseWithGrad runs the loss of z in dtype dt and its gradient with
// respect to z.
func antiCollapseWithGrad(z *tensor.Dense, dt tensor.Dtype, opts AntiCollapseOptions) (float64, []float64, error) {
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, []*tensor.Dense{z}, dt)
	loss, err := AntiCollapse(nodes[0], opts)
	if err != nil {
		return 0, nil, err
	}
	if _, err := G.Grad(loss, nodes[0]); err != nil {
		return 0, nil, err
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(nodes[0]))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return 0, nil, err
	}
	v, err := scalarFloat("test", loss.Value())
	if err != nil {
		return 0, nil, err
	}
	grad, err := nodes[0].Grad()
	if err != nil {
		return 0, nil, err
	}
	return v, toFloat64s(grad.(*tensor.Dense)), nil
}

// TestAntiCollapseDegenerateBatches runs the loss and its gradient on real
// Fashion-MNIST features (49 pooled pixels) in the degenerate batches
// training can meet: B > S, B = S and B < S (the diagonal approximation),
// the minimum B = 2, duplicate images (zero covariance), two images
// repeated (rank 1), and constant feature dimensions, each with the
// default eps = 1e-6 and with eps = 0 (so that RobustCholesky must repair
// the singular covariance itself). Loss and gradient must be finite in
// float32 and float64; for an all-duplicate batch the loss is known exactly,
// -sqrt(max(eps, 1e-6)), and the gradient is zero.
func TestAntiCollapseDegenerateBatches(t *testing.T) {
	feats := pooledFashion(t, 64)
	dup := make([][]float64, 64)
	pair := make([][]float64, 64)
	constant := make([][]float64, 64)
	for i := range dup {
		dup[i] = feats[0]
		pair[i] = feats[i%2]
		constant[i] = slices.Clone(feats[i])
		for j := range 14 {
			constant[i][j] = 0.5
		}
	}
	cases := []struct {
		name     string
		rows     [][]float64
		collapse bool // every row equal: exact loss -sqrt(max(eps, 1e-6)), zero gradient
	}{
		{"64 images (B > S)", feats, false},
		{"49 images (B = S, diagonal)", feats[:49], false},
		{"10 images (B < S, diagonal)", feats[:10], false},
		{"2 images", feats[:2], false},
		{"64 copies of one image", dup, true},
		{"10 copies of one image (diagonal)", dup[:10], true},
		{"2 images, 32 copies each (rank 1)", pair, false},
		{"14 constant features", constant, false},
	}
	for i, c := range cases {
		for _, opts := range []AntiCollapseOptions{DefaultAntiCollapseOptions(), {Beta: 1}} {
			for _, dt := range floatTypes {
				loss, grad, err := antiCollapseWithGrad(featureMatrix(c.rows), dt, opts)
				if err != nil {
					t.Fatalf("case %d %s, eps %v, %v: %v", i, c.name, opts.Jitter, dt, err)
				}
				if math.IsNaN(loss) || math.IsInf(loss, 0) {
					t.Errorf("case %d %s, eps %v, %v: loss %v", i, c.name, opts.Jitter, dt, loss)
				}
				for j, v := range grad {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("case %d %s, eps %v, %v: gradient[%d] = %v", i, c.name, opts.Jitter, dt, j, v)
						break
					}
				}
				if !c.collapse {
					continue
				}
				if want := -math.Sqrt(math.Max(opts.Jitter, minRepairJitter)); math.Abs(loss-want) > 1e-7 {
					t.Errorf("case %d %s, eps %v, %v: loss %v, want %v", i, c.name, opts.Jitter, dt, loss, want)
				}
				if slices.ContainsFunc(grad, func(v float64) bool { return v != 0 }) {
					t.Errorf("case %d %s, eps %v, %v: gradient not zero on identical rows", i, c.name, opts.Jitter, dt)
				}
			}
		}
	}
}

// TestAntiCollapseNonFiniteFeatures: a NaN or an infinity anywhere in the
// batch, in either path (B > S and B <= S), fails the run with an error
// wrapping ErrNonFinite that names the entry.
func TestAntiCollapseNonFiniteFeatures(t *testing.T) {
	feats := pooledFashion(t, 64)
	cases := []struct {
		b, row, col int
		v           float64
	}{
		{64, 10, 3, math.NaN()},
		{64, 63, 48, math.Inf(1)},
		{10, 0, 0, math.Inf(-1)},
		{10, 9, 20, math.NaN()},
	}
	for i, c := range cases {
		rows := make([][]float64, c.b)
		for r := range rows {
			rows[r] = slices.Clone(feats[r])
		}
		rows[c.row][c.col] = c.v
		for _, dt := range floatTypes {
			_, _, err := antiCollapseWithGrad(featureMatrix(rows), dt, DefaultAntiCollapseOptions())
			where := fmt.Sprintf("z[%d,%d]", c.row, c.col)
			if cause := machineCause(err); !errors.Is(cause, ErrNonFinite) || !strings.Contains(err.Error(), where) {
				t.Errorf("case %d %v: error %v, want ErrNonFinite naming the entry", i, dt, err)
			}
		}
	}
}
