package gauss

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// NoClass is what Predict returns for a row whose scores are all NaN (a NaN
// feature). It never equals a label.
const NoClass = -1

// NormEpsilon is the floor of the feature norm in L2 normalisation, as in
// torch.nn.functional.normalize, which the authors' code uses.
const NormEpsilon = 1e-12

// ClassifierTables are the classifier's parameters in the form the ONNX
// exporter writes into classifier.onnx. For K classes in S dimensions:
//
//	Means  [K, S]     class means m_c, already L2-normalised when Normalize
//	Whiten [K, S, S]  W_c = L_c^-1, row-major per class, Sigma'_c = L_c L_c^T
//	                  (lower triangular, so each W_c is lower triangular)
//	Bias   [K]        0, or log det Sigma'_c - 2 log pi_c when FullGaussian
//	                  (plus the age bias; for the softmax head and its mixture
//	                  with the Gaussian head, NewClassifier says what they hold)
//
// and the score of a feature z (smaller is closer) is
//
//	zh        = z / max(||z||_2, 1e-12)   if Normalize, else z
//	score_c   = || W_c (zh - m_c) ||^2 + b_c
//
// The slices belong to the caller.
type ClassifierTables struct {
	K, S      int
	Means     []float32
	Whiten    []float32
	Bias      []float32
	Normalize bool
}

// Classifier is the task-agnostic Mahalanobis (or full Gaussian) classifier
// over Gaussian prototypes (docs/method.md, "Classifier"; the paper's appendix
// A.1.2). It is immutable after NewClassifier and safe for concurrent use.
type Classifier struct {
	k, s      int
	normalize bool
	// The factored tables in float32, as Tables returns them.
	means  []float32 // [K, S]
	whiten []float32 // [K, S, S]
	bias   []float32 // [K]
	// The expanded form Scores evaluates (QuadraticTables), in float64.
	quad      *expansion
	coef      []float64 // [K, D]
	constant  []float64 // [K]
	fallbacks []Fallback
}

// NewClassifier builds the classifier for the prototypes protos, class c
// being protos[c]. For each class (docs/method.md, "Classifier"):
//
//	Sigma_c  <- (1-PoolCov)*Sigma_c + PoolCov*mean_k Sigma_k          (PoolCovariances)
//	Sigma'_c = Sigma_c + g1_c*(tr(Sigma_c)/S)*I + g2*V2_c*(1-I) + 1e-8 I
//	           g1_c = Shrink + AgeShrink*Ages[c], g2 = OffDiagShrink (ShrinkSeparate)
//	Sigma'_c <- D^-1/2 Sigma'_c D^-1/2,  D = diag(Sigma'_c)   if Normalize
//	m_c      = mu_c / max(||mu_c||, 1e-12)                    if Normalize
//	W_c      = L_c^-1 with L_c L_c^T = Sigma'_c               (see Cholesky)
//	b_c      = log det Sigma'_c - 2 log pi_c                  if FullGaussian
//	b_c     += AgeBias * Ages[c]
//
// With Head HeadSoftmax the tables are instead those of a linear softmax
// fitted on samples of the Gaussians (SoftmaxTables), W_c = I, and b_c gets
// AgeBias * Ages[c] on top; with GaussianWeight lambda > 0, the score is
// that plus lambda times the score of the formulas above without the age
// bias, written as one quadratic form of the tables' kind (mixGaussian),
// so Tables, the exported graph and Fallbacks describe the sum.
//
// priors are used only when FullGaussian: nil means uniform pi_c = 1/K,
// otherwise len(priors) must be K with positive entries, which are
// normalised to sum 1, so class counts can be passed as they are. Invalid
// options, priors or prototypes (mismatched dimensions, NaN) give errors that
// name the class and wrap ErrShape, ErrNonFinite or ErrNotPositiveDefinite.
func NewClassifier(protos []Gaussian, priors []float64, opts ClassifierOptions) (*Classifier, error) {
	k := len(protos)
	if err := opts.validate(k); err != nil {
		return nil, err
	}
	if k == 0 {
		return nil, errors.New("gauss: classifier: no prototypes")
	}
	logPriors, err := logPriors(priors, k)
	if err != nil {
		return nil, err
	}
	s := protos[0].Dim()
	for cls, p := range protos {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("gauss: classifier: class %d: %w", cls, err)
		}
		if p.Dim() != s {
			return nil, fmt.Errorf("gauss: classifier: class %d has dimension %d, class 0 has %d: %w", cls, p.Dim(), s, ErrShape)
		}
	}
	d := QuadraticDim(s)
	c := &Classifier{
		k:         k,
		s:         s,
		normalize: opts.Normalize,
		means:     make([]float32, k*s),
		whiten:    make([]float32, k*s*s),
		bias:      make([]float32, k),
		coef:      make([]float64, k*d),
		constant:  make([]float64, k),
		fallbacks: make([]Fallback, k),
	}
	if opts.Head == HeadSoftmax {
		err = c.setSoftmaxClasses(protos, opts)
	} else {
		err = c.setGaussianClasses(protos, logPriors, opts)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// setSoftmaxClasses sets every class's tables to those of the linear softmax head (SoftmaxTables):
// W_c = I, the head's bias plus AgeBias * Ages[c]; with GaussianWeight, the head mixed with the
// Gaussian classifier (mixGaussian).
func (c *Classifier) setSoftmaxClasses(protos []Gaussian, opts ClassifierOptions) error {
	s := c.s
	means, bias, err := SoftmaxTables(protos, opts.Normalize)
	if err != nil {
		return err
	}
	whiten := make([]float64, c.k*s*s)
	for cls := range protos {
		for i := range s {
			whiten[cls*s*s+i*s+i] = 1
		}
		bias[cls] += opts.classBias(cls)
	}
	if opts.GaussianWeight != 0 {
		if err := c.mixGaussian(protos, opts, whiten, means, bias); err != nil {
			return err
		}
	}
	c.quad = newExpansion(c.k, s, means)
	for cls := range protos {
		c.setClass(cls, whiten[cls*s*s:(cls+1)*s*s], means[cls*s:(cls+1)*s], bias[cls])
	}
	return nil
}

// mixGaussian adds lambda = opts.GaussianWeight times the Gaussian classifier's score to each class's
// quadratic score ||W_c (zh - m_c)||^2 + b_c held in whiten ([K, S, S]), means ([K, S]) and bias
// ([K]), which it overwrites with the sum's. With P_c = W_c^T W_c and the Gaussian head's G_c, mu_c
// and g_c (opts' Gaussian-side options, no age bias: the head's part holds it), the sum is again one
// quadratic form,
//
//	A_c = P_c + lambda G_c                       (positive definite: P_c is)
//	v_c = P_c m_c + lambda G_c mu_c,   a_c = A_c^-1 v_c
//	score_c = (zh - a_c)^T A_c (zh - a_c) + b_c + lambda g_c + m_c^T P_c m_c + lambda mu_c^T G_c mu_c - v_c^T a_c
//
// written with the lower-triangular W'_c = J U J, where J reverses the coordinates and U^T U is the
// Cholesky factorisation of J A_c J, so that W'_c^T W'_c = A_c as the tables' whitening matrices are.
func (c *Classifier) mixGaussian(protos []Gaussian, opts ClassifierOptions, whiten, means, bias []float64) error {
	s, lambda := c.s, opts.GaussianWeight
	gopts := opts
	gopts.Head, gopts.AgeBias, gopts.GaussianWeight = HeadGaussian, 0, 0
	gmeans := gaussianMeans(protos, gopts.Normalize)
	p := mat.NewSymDense(s, nil)
	g := mat.NewSymDense(s, nil)
	reversed := mat.NewSymDense(s, nil)
	pm, gm, v := make([]float64, s), make([]float64, s), make([]float64, s)
	jv, y := mat.NewVecDense(s, nil), mat.NewVecDense(s, nil)
	var chol mat.Cholesky
	var u mat.TriDense
	return forEachGaussianClass(protos, nil, gopts, func(cls int, w []float64, gbias float64, fb Fallback) error {
		c.fallbacks[cls] = fb
		wc, m, mu := whiten[cls*s*s:(cls+1)*s*s], means[cls*s:(cls+1)*s], gmeans[cls*s:(cls+1)*s]
		p.SymOuterK(1, mat.NewDense(s, s, wc).T()) // W_c^T W_c
		g.SymOuterK(1, mat.NewDense(s, s, w).T())
		constant := bias[cls] + lambda*gbias
		for i := range s {
			pm[i], gm[i] = 0, 0
			for j := range s {
				pm[i] += p.At(i, j) * m[j]
				gm[i] += g.At(i, j) * mu[j]
			}
		}
		for i := range s {
			v[i] = pm[i] + lambda*gm[i]
			constant += m[i]*pm[i] + lambda*mu[i]*gm[i]
		}
		for i := range s {
			for j := i; j < s; j++ {
				reversed.SetSym(s-1-i, s-1-j, p.At(i, j)+lambda*g.At(i, j))
			}
		}
		if !chol.Factorize(reversed) {
			return fmt.Errorf("gauss: classifier: class %d: head and Gaussian mixed: %w", cls, ErrNotPositiveDefinite)
		}
		for i := range s {
			jv.SetVec(s-1-i, v[i])
		}
		if err := chol.SolveVecTo(y, jv); err != nil {
			return fmt.Errorf("gauss: classifier: class %d: head and Gaussian mixed: %w", cls, err)
		}
		chol.UTo(&u)
		for i := range s {
			m[i] = y.AtVec(s - 1 - i)
			constant -= v[i] * m[i]
			for j := range s {
				wc[i*s+j] = u.At(s-1-i, s-1-j)
			}
		}
		bias[cls] = constant
		return nil
	})
}

// setGaussianClasses sets every class's tables from its Gaussian: the (normalised) mean, the whitening
// W_c = L_c^-1 of the pooled, shrunk (and normalised) covariance, and the bias (NewClassifier's formulas).
func (c *Classifier) setGaussianClasses(protos []Gaussian, logPriors []float64, opts ClassifierOptions) error {
	s := c.s
	means := gaussianMeans(protos, opts.Normalize)
	c.quad = newExpansion(c.k, s, means)
	return forEachGaussianClass(protos, logPriors, opts, func(cls int, w []float64, bias float64, fb Fallback) error {
		c.fallbacks[cls] = fb
		c.setClass(cls, w, means[cls*s:(cls+1)*s], bias)
		return nil
	})
}

// gaussianMeans returns the class means ([K, S]) as the Gaussian head scores them: L2-normalised when
// normalize.
func gaussianMeans(protos []Gaussian, normalize bool) []float64 {
	s := protos[0].Dim()
	means := make([]float64, len(protos)*s)
	for cls, p := range protos {
		mean := means[cls*s : (cls+1)*s]
		copy(mean, p.Mean)
		if normalize {
			normalizeL2(mean)
		}
	}
	return means
}

// forEachGaussianClass calls class, in class order, with each class's whitening W_c = L_c^-1 ([S, S],
// lower triangular; reused between calls) of the pooled, shrunk (and normalised) covariance, its bias
// (NewClassifier's formulas; logPriors is read only with FullGaussian) and the path its Cholesky
// factorisation took. One class's matrix at a time, so many classes cost no K x S x S buffer.
func forEachGaussianClass(protos []Gaussian, logPriors []float64, opts ClassifierOptions, class func(cls int, w []float64, bias float64, fb Fallback) error) error {
	s := protos[0].Dim()
	covs := PoolCovariances(protos, opts.PoolCov)
	w := blas64.General{Rows: s, Cols: s, Stride: s, Data: make([]float64, s*s)}
	for cls := range protos {
		shrunk := ShrinkSeparate(covs[cls], opts.classShrink(cls), opts.OffDiagShrink)
		if opts.Normalize {
			if err := toCorrelation(shrunk); err != nil {
				return fmt.Errorf("gauss: classifier: class %d: %w", cls, err)
			}
		}
		chol, fb, err := Cholesky(shrunk)
		if err != nil {
			return fmt.Errorf("gauss: classifier: class %d: %w", cls, err)
		}
		var l mat.TriDense
		chol.LTo(&l)
		clear(w.Data)
		for i := range s {
			w.Data[i*s+i] = 1
		}
		blas64.Trsm(blas.Left, blas.NoTrans, 1, l.RawTriangular(), w)
		var bias float64
		if opts.FullGaussian {
			bias = chol.LogDet() - 2*logPriors[cls]
		}
		bias += opts.classBias(cls)
		if err := class(cls, w.Data, bias, fb); err != nil {
			return err
		}
	}
	return nil
}

// setClass writes class cls's tables: whitening matrix w ([S, S]), mean
// and bias, in float32 and in the expanded form Scores evaluates.
func (c *Classifier) setClass(cls int, w, mean []float64, bias float64) {
	s, d := c.s, c.quad.d
	c.constant[cls] = c.quad.class(w, mean, bias, c.coef[cls*d:(cls+1)*d])
	copyFloat32(c.whiten[cls*s*s:(cls+1)*s*s], w)
	copyFloat32(c.means[cls*s:(cls+1)*s], mean)
	c.bias[cls] = float32(bias)
}

// logPriors validates priors and returns log pi_c with pi normalised to sum 1.
func logPriors(priors []float64, k int) ([]float64, error) {
	out := make([]float64, k)
	if priors == nil {
		for i := range out {
			out[i] = -math.Log(float64(k))
		}
		return out, nil
	}
	if len(priors) != k {
		return nil, fmt.Errorf("gauss: classifier: %d priors for %d classes: %w", len(priors), k, ErrShape)
	}
	var sum float64
	for i, p := range priors {
		if !(p > 0) || math.IsInf(p, 1) {
			return nil, fmt.Errorf("gauss: classifier: prior of class %d is %v, want a positive finite number", i, p)
		}
		sum += p
	}
	for i, p := range priors {
		out[i] = math.Log(p / sum)
	}
	return out, nil
}

// toCorrelation replaces a by D^-1/2 a D^-1/2 with D = diag(a).
func toCorrelation(a *mat.SymDense) error {
	s := a.SymmetricDim()
	inv := make([]float64, s)
	for i := range s {
		d := a.At(i, i)
		if !(d > 0) {
			return fmt.Errorf("shrunk covariance has diagonal entry [%d] = %v: %w", i, d, ErrNotPositiveDefinite)
		}
		inv[i] = 1 / math.Sqrt(d)
	}
	for i := range s {
		for j := i; j < s; j++ {
			a.SetSym(i, j, a.At(i, j)*inv[i]*inv[j])
		}
	}
	return nil
}

// normalizeL2 scales v to unit L2 norm, v / max(||v||, NormEpsilon).
func normalizeL2(v []float64) {
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	scale := 1 / max(math.Sqrt(ss), NormEpsilon)
	for i := range v {
		v[i] *= scale
	}
}

// Classes returns K, the number of classes.
func (c *Classifier) Classes() int { return c.k }

// Dim returns S, the feature dimension.
func (c *Classifier) Dim() int { return c.s }

// Fallbacks returns, per class, which path Cholesky took for Sigma'_c; any
// value other than Direct means that class's covariance was repaired. The
// slice belongs to the caller.
func (c *Classifier) Fallbacks() []Fallback {
	return append([]Fallback(nil), c.fallbacks...)
}

// Tables returns fresh float32 copies of the classifier's parameters, the
// export contract of classifier.onnx (see ClassifierTables).
func (c *Classifier) Tables() ClassifierTables {
	return ClassifierTables{
		K:         c.k,
		S:         c.s,
		Means:     slices.Clone(c.means),
		Whiten:    slices.Clone(c.whiten),
		Bias:      slices.Clone(c.bias),
		Normalize: c.normalize,
	}
}

func toFloat32(v []float64) []float32 {
	out := make([]float32, len(v))
	copyFloat32(out, v)
	return out
}

func copyFloat32(dst []float32, src []float64) {
	for i, x := range src {
		dst[i] = float32(x)
	}
}

// scoreBlock is the number of rows scored per GEMM; it bounds the scratch of
// one worker to scoreBlock x (D + K) float64 values.
const scoreBlock = 64

// Scores returns the [n, K] row-major scores of the n features in z ([n, S]
// row-major), score_c as in ClassifierTables; smaller is closer. It
// evaluates the expanded form of QuadraticTables, all classes at once as
// one product,
//
//	scores = Phi Coef^T + Const,   Phi = [phi(zh_1 - center); ...]   [n, D]
//
// in float64 through gonum's blas64 (which uses whatever implementation the
// program registered with blas64.Use), with blocks of rows spread over
// GOMAXPROCS goroutines. A row containing NaN gets NaN scores. It panics if
// len(z) != n*S.
func (c *Classifier) Scores(z []float32, n int) []float32 {
	if n < 0 || len(z) != n*c.s {
		panic(fmt.Sprintf("gauss: scores: %d values for %d rows of dimension %d", len(z), n, c.s))
	}
	out := make([]float32, n*c.k)
	blocks := (n + scoreBlock - 1) / scoreBlock
	workers := min(runtime.GOMAXPROCS(0), blocks)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			phi := make([]float64, scoreBlock*c.quad.d)
			y := make([]float64, scoreBlock*c.k)
			for b := w; b < blocks; b += workers {
				start := b * scoreBlock
				rows := min(scoreBlock, n-start)
				c.scoreBlock(z[start*c.s:(start+rows)*c.s], rows, phi, y, out[start*c.k:(start+rows)*c.k])
			}
		})
	}
	wg.Wait()
	return out
}

// scoreBlock scores rows features from z into out using the scratch phi and y.
func (c *Classifier) scoreBlock(z []float32, rows int, phi, y []float64, out []float32) {
	s, d := c.s, c.quad.d
	zh := make([]float64, s)
	for i := range rows {
		for j, v := range z[i*s : (i+1)*s] {
			zh[j] = float64(v)
		}
		if c.normalize {
			normalizeL2(zh)
		}
		c.quad.features(zh, phi[i*d:(i+1)*d])
	}
	ym := blas64.General{Rows: rows, Cols: c.k, Stride: c.k, Data: y[:rows*c.k]}
	for i := range rows {
		copy(ym.Data[i*c.k:(i+1)*c.k], c.constant)
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: rows, Cols: d, Stride: d, Data: phi[:rows*d]},
		blas64.General{Rows: c.k, Cols: d, Stride: d, Data: c.coef},
		1, ym)
	copyFloat32(out, ym.Data)
}

// MeanScores returns the element-wise mean of two score tables of the same
// images, such as an image's scores and its horizontal mirror's (the
// test-time flip, ClassifierOptions of the manifest): the mean keeps the
// scale of one image's scores, so a threshold or calibration fitted on
// either applies. It panics if the lengths differ.
func MeanScores(a, b []float32) []float32 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("gauss: mean scores: %d and %d values", len(a), len(b)))
	}
	out := make([]float32, len(a))
	for i := range a {
		out[i] = (a[i] + b[i]) / 2
	}
	return out
}

// checkAllowed panics if allowed is empty but not nil or holds an index
// outside [0, K).
func (c *Classifier) checkAllowed(allowed []int) {
	if allowed != nil && len(allowed) == 0 {
		panic("gauss: predict: empty allowed class set")
	}
	for _, cls := range allowed {
		if cls < 0 || cls >= c.k {
			panic(fmt.Sprintf("gauss: predict: allowed class %d outside [0, %d)", cls, c.k))
		}
	}
}

// Predict returns, for each of the n features in z ([n, S] row-major), the
// class with the smallest score among allowed: nil allows every class
// (task-agnostic, TAg, paper eq. bayes_pred_tag), a task's classes give the
// task-aware prediction (TAw, eq. bayes_pred_taw). Ties go to the lower class
// index whatever the order of allowed; NaN scores never win, and a row whose
// allowed scores are all NaN predicts NoClass. It panics if allowed is empty
// but not nil, holds an index outside [0, K), or len(z) != n*S.
func (c *Classifier) Predict(z []float32, n int, allowed []int) []int {
	c.checkAllowed(allowed)
	return c.nearest(c.Scores(z, n), n, allowed)
}

// PredictScores is Predict on scores already computed: [n, K] row-major as
// Scores returns them, or a combination of such scores, for example their
// mean over an image and its mirror. It panics as Predict does, and if
// len(scores) != n*K.
func (c *Classifier) PredictScores(scores []float32, n int, allowed []int) []int {
	c.checkAllowed(allowed)
	if n < 0 || len(scores) != n*c.k {
		panic(fmt.Sprintf("gauss: predict: %d scores for %d rows of %d classes", len(scores), n, c.k))
	}
	return c.nearest(scores, n, allowed)
}

// nearest returns the class of smallest score among allowed in each of the n rows of scores, checked by
// the caller.
func (c *Classifier) nearest(scores []float32, n int, allowed []int) []int {
	pred := make([]int, n)
	for i := range n {
		row := scores[i*c.k : (i+1)*c.k]
		best, bestScore := NoClass, float32(0)
		consider := func(cls int) {
			v := row[cls]
			if math.IsNaN(float64(v)) {
				return
			}
			if best == NoClass || v < bestScore || (v == bestScore && cls < best) {
				best, bestScore = cls, v
			}
		}
		if allowed == nil {
			for cls := range c.k {
				consider(cls)
			}
		} else {
			for _, cls := range allowed {
				consider(cls)
			}
		}
		pred[i] = best
	}
	return pred
}
