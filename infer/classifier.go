package infer

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/names"
)

var (
	// ErrClosed is returned by every method of a closed Classifier.
	ErrClosed = errors.New("classifier is closed")
	// ErrNoAdapter is returned by Transport when the bundle has no
	// adapter.onnx (a model trained on one task).
	ErrNoAdapter = errors.New("model has no adapter")
)

// Classifier classifies images with one model bundle. Create it with Open
// and release it with Close. It is safe for concurrent use by any number of
// goroutines: each call preprocesses its images on the calling goroutine
// and runs the shared ONNX Runtime sessions, which run concurrent calls in
// parallel.
type Classifier struct {
	dir       string
	manifest  bundle.Manifest
	classes   []bundle.Class // infer's own copy: Manifest's callers may write theirs
	pre       imaging.Preprocess
	topK      int
	maxPixels int64
	provider  Provider
	openSet   openSet

	// mu is held for reading by every call that runs a session and for
	// writing by Close, so Close waits for calls in flight and never frees
	// a session under them.
	mu       sync.RWMutex
	closed   bool
	model    *session // model.onnx: image -> scores (and features where modelFeatures)
	backbone *session // backbone.onnx: image -> features
	adapter  *session // adapter.onnx: features_old -> features; nil without one
	// modelFeatures: model.onnx outputs the feature too
	// (bundle.Manifest.ModelFeatures).
	modelFeatures bool
	// shortlist is shortlist.onnx (features -> the shortlistSize classes
	// scored exactly), nil when every class is scored exactly.
	shortlist     *session
	shortlistSize int
}

// Open loads the model bundle in dir: it verifies the manifest and file
// checksums (bundle.Open; a directory from before manifest digests opens
// with a warning line on the WithLog writer, as does one whose class names
// names.Class would refuse today, or two of which look alike: names.Warnings), initialises ONNX Runtime if this process has not
// yet (InitRuntime), and creates the ONNX Runtime sessions once, with the
// execution provider the options ask for. It then runs each model once on
// a blank batch of one, so a model that does not match its manifest fails
// here rather than on the first request, and the first request does not pay
// for ONNX Runtime's lazy set-up.
//
// Creating sessions can take minutes (TensorRT builds its engines then).
// When ctx is done first, Open returns at once with an error wrapping
// ctx.Err(); the sessions still being created are released in the
// background as soon as ONNX Runtime hands them over, since it cannot
// stop building them.
//
// The caller owns the Classifier and must Close it. On error Open releases
// everything it created and returns a nil Classifier, which Close accepts.
func Open(ctx context.Context, dir string, opts ...Option) (*Classifier, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("model %s: %w", dir, err)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, err := InitRuntime(cfg.libraryPath); err != nil {
		return nil, err
	}
	b, err := bundle.Open(dir)
	if err != nil {
		return nil, err
	}
	if !b.ManifestVerified {
		fmt.Fprintf(cfg.log, "warning: model %s has no %s (exported by an older bicyc), so its manifest is not verified; export it again to verify it\n", dir, bundle.DigestFile)
	}
	m := b.Manifest
	warnNames(cfg.log, dir, m.Classes)
	specs, shortlistSize, err := sessionSpecs(b, cfg.exactScores)
	if err != nil {
		return nil, err
	}
	openSet, err := newOpenSet(b, &cfg)
	if err != nil {
		return nil, err
	}
	sessions, provider, err := startSessionsCtx(ctx, &cfg, specs)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", dir, err)
	}
	c := &Classifier{
		dir:       dir,
		manifest:  m,
		classes:   append([]bundle.Class(nil), m.Classes...),
		pre:       m.Preprocess, // validated by bundle.Open
		topK:      cfg.topK,
		maxPixels: cfg.maxPixels,
		provider:  provider,
		openSet:   openSet,
		model:     sessions[0],
		backbone:  sessions[1],

		modelFeatures: m.ModelFeatures,
	}
	if b.Has(bundle.AdapterFile) {
		c.adapter = sessions[2]
	}
	if shortlistSize > 0 {
		c.shortlist, c.shortlistSize = sessions[len(sessions)-1], shortlistSize
	}
	c.topK = gauss.ResolveTopK(len(c.classes), c.topK, m.Classifier.TopK)
	if err := c.verify(ctx, b); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// warnNames warns on log about class names made before names.Class
// refused them: they keep working, but the user should know.
func warnNames(log io.Writer, dir string, classes []bundle.Class) {
	var classNames []string
	for _, c := range classes {
		if c.Name != "" { // unnamed: the ID is shown
			classNames = append(classNames, c.Name)
		}
	}
	for _, w := range names.Warnings(classNames) {
		fmt.Fprintf(log, "warning: model %s: %s\n", dir, w)
	}
}

// sessionSpecs reads the ONNX files of bundle b with their input and
// output names, the bundle's contract (package bundle): model.onnx,
// backbone.onnx, adapter.onnx if present, and shortlist.onnx if present
// and not exactScores, last. shortlistSize is 0 without a shortlist.
func sessionSpecs(b *bundle.Bundle, exactScores bool) (specs []modelSpec, shortlistSize int, err error) {
	files := [][3]string{
		{bundle.ModelFile, bundle.TensorImage, bundle.TensorScores},
		{bundle.BackboneFile, bundle.TensorImage, bundle.TensorFeatures},
	}
	if b.Has(bundle.AdapterFile) {
		files = append(files, [3]string{bundle.AdapterFile, bundle.TensorFeaturesOld, bundle.TensorFeatures})
	}
	specs = make([]modelSpec, len(files))
	for i, f := range files {
		specs[i] = modelSpec{path: b.Path(f[0]), inputs: f[1:2], outputs: f[2:3]}
		if specs[i].onnx, err = b.ReadFile(f[0]); err != nil {
			return nil, 0, err
		}
	}
	if b.Manifest.ModelFeatures {
		specs[0].outputs = []string{bundle.TensorScores, bundle.TensorFeatures}
	}
	if b.Has(bundle.ShortlistFile) && !exactScores {
		shortlistSize = b.Manifest.ShortlistSize()
		spec := modelSpec{path: b.Path(bundle.ShortlistFile), inputs: []string{bundle.TensorFeatures},
			outputs: []string{bundle.TensorShortlistClasses, bundle.TensorShortlistScores, bundle.TensorApproximateScores}}
		if spec.onnx, err = b.ReadFile(bundle.ShortlistFile); err != nil {
			return nil, 0, err
		}
		specs = append(specs, spec)
	}
	return specs, shortlistSize, nil
}

// verify runs the model once on a blank batch (warmUp) and, with a
// shortlist, replays a cheap form of the manifest's shortlist check
// against b's prototypes; errors name the model directory.
func (c *Classifier) verify(ctx context.Context, b *bundle.Bundle) error {
	if err := c.warmUp(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("model %s: %w", c.dir, ctxErr)
		}
		return fmt.Errorf("model %s does not match its manifest: %w", c.dir, err)
	}
	if c.shortlist != nil {
		if err := c.checkShortlist(ctx, b.Prototypes.Means); err != nil {
			return fmt.Errorf("model %s: %w", c.dir, err)
		}
	}
	return nil
}

// shortlistCheckClasses is how many classes checkShortlist samples.
const shortlistCheckClasses = 64

// checkShortlist replays, cheaply, the check that chose the model's
// shortlist (bundle.Shortlist; classgraph.PlanShortlist, which kept the
// exact closest class of 99.9 % of features drawn from the class
// Gaussians): it runs shortlist.onnx on the means of up to
// shortlistCheckClasses classes, evenly spaced, and requires each class to
// be shortlisted for its own mean, the most typical feature of the class,
// in at least half of them. A shortlist.onnx written for this model keeps
// them all; one from another model of as many classes (its file's
// checksum recomputed in the manifest) keeps about its share of the
// classes, a few percent, and would change answers silently: ErrShortlist.
func (c *Classifier) checkShortlist(ctx context.Context, means []float32) error {
	k, s, n := len(c.classes), c.manifest.FeatureDim, c.shortlistSize
	m := min(k, shortlistCheckClasses)
	z := make([]float32, 0, m*s)
	cols := make([]int64, m)
	for i := range m {
		cols[i] = int64(i * k / m)
		z = append(z, means[int(cols[i])*s:(int(cols[i])+1)*s]...)
	}
	r, err := c.shortlist.runShortlist(ctx, z, []int64{int64(m), int64(s)}, n, k)
	if err != nil {
		return err
	}
	kept := 0
	for i, col := range cols {
		if slices.Contains(r.classes[i*n:(i+1)*n], col) {
			kept++
		}
	}
	if 2*kept < m {
		return fmt.Errorf("%s: %w: of %d classes, %d are shortlisted for their own mean (want at least half); write the shortlist again (bicyc-infer shortlist) or export the model again", bundle.ShortlistFile, ErrShortlist, m, kept)
	}
	return nil
}

// warmUp runs every session once on zeros of the manifest's shapes.
func (c *Classifier) warmUp(ctx context.Context) error {
	blank := make([]float32, c.pre.ImageSize())
	shape := []int64{1, int64(c.pre.Channels), int64(c.pre.Height), int64(c.pre.Width)}
	if _, _, err := c.runModel(ctx, blank, shape); err != nil {
		return err
	}
	if _, err := c.backbone.run(ctx, blank, shape, c.manifest.FeatureDim); err != nil {
		return err
	}
	s := int64(c.manifest.FeatureDim)
	if c.adapter != nil {
		if _, err := c.adapter.run(ctx, make([]float32, s), []int64{1, s}, int(s)); err != nil {
			return err
		}
	}
	if c.shortlist != nil {
		if _, err := c.shortlist.runShortlist(ctx, make([]float32, s), []int64{1, s}, c.shortlistSize, len(c.classes)); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the ONNX Runtime sessions, after waiting for calls in
// flight. It is idempotent, safe for concurrent use, and accepts the nil
// Classifier that a failed Open returns. Later calls return ErrClosed.
func (c *Classifier) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	destroyAll([]*session{c.model, c.backbone, c.adapter, c.shortlist})
	return nil
}

// Provider returns the execution provider the sessions run on; with
// ProviderAuto it is the one that was chosen.
func (c *Classifier) Provider() Provider { return c.provider }

// ShortlistSize returns how many classes each image of a batch smaller
// than ShortlistMaxBatch is scored exactly against: 0 when every class is
// (the model has no shortlist.onnx, or WithExactScores), else the
// manifest's shortlist size (see ClassifyBatch).
func (c *Classifier) ShortlistSize() int { return c.shortlistSize }

// TopK returns how many predictions each Result holds.
func (c *Classifier) TopK() int { return c.topK }

// UnknownThreshold returns the unknown-score threshold above which a
// Result is Unknown (+Inf for a model without calibration and no
// WithUnknownThreshold) and the acceptance rate it was chosen for (0 when
// set directly or not calibrated).
func (c *Classifier) UnknownThreshold() (threshold, acceptRate float64) {
	return c.openSet.threshold, c.openSet.rate
}

// Calibrated reports whether the model has a calibration, so Results carry
// probabilities and a confidence.
func (c *Classifier) Calibrated() bool { return c.openSet.cal != nil }

// Classes returns the classes in score-column order, as a new slice.
func (c *Classifier) Classes() []bundle.Class {
	return append([]bundle.Class(nil), c.classes...)
}

// Manifest returns the bundle's manifest. Its slices and maps are shared
// with the Classifier: treat them as read-only.
func (c *Classifier) Manifest() bundle.Manifest { return c.manifest }

// Classify classifies one image. See ClassifyBatch.
func (c *Classifier) Classify(ctx context.Context, img image.Image) (Result, error) {
	rs, err := c.ClassifyBatch(ctx, []image.Image{img})
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// ClassifyBatch preprocesses every image with the manifest's preprocessing
// (imaging.Preprocess.Image: alpha onto the background, Catmull-Rom resize by
// the manifest's resize mode, squash or center crop, channel conversion,
// normalisation), runs
// model.onnx once on the [N,C,H,W] batch and returns one Result per image,
// in order.
//
// A model directory with a shortlist (bundle.ShortlistFile, written for
// 1000 classes or more by default; gauss.ClassifierOptions.Shortlist) is
// run as backbone.onnx then shortlist.onnx instead for batches of fewer
// than ShortlistMaxBatch images, unless WithExactScores: every class gets
// an int8 approximate score, the ShortlistSize best of them their exact
// one, and the predictions are the best exact scores among those. They
// equal the exact predictions whenever the exact top-k classes are among
// the shortlisted ones (measured on Fashion-MNIST test images at 5000
// classes: the top-1 on 99.98 %; docs/classes.md). Probabilities and the
// unknown score are computed from the exact scores of the shortlisted
// classes and the approximate scores of the rest, each raised to at least
// the largest shortlisted score (a class left out is taken to be no
// closer).
//
// A nil image (ErrNilImage), or a distance that is NaN or infinite, is an
// error naming the image's index. An empty batch returns no results.
//
// When ctx is done, ClassifyBatch stops between images while it
// preprocesses them, and ONNX Runtime stops its run after the node in
// progress (RunOptions.Terminate); the error wraps ctx.Err(). The
// Classifier stays usable.
func (c *Classifier) ClassifyBatch(ctx context.Context, imgs []image.Image) ([]Result, error) {
	if len(imgs) == 0 {
		return nil, nil
	}
	batch, shape, err := c.preprocess(ctx, imgs)
	if err != nil {
		return nil, err
	}
	return c.classifyNCHW(ctx, batch, shape)
}

// Input is one image reduced to the model's input by the manifest's
// preprocessing: C*H*W float32 values, CHW. It is small where a decoded
// image can take hundreds of megabytes (a 4096x4096 16-bit PNG decodes to
// 128 MiB, its Input for a 28x28 gray model is 3 KiB), so a caller that
// gathers a batch from many images keeps Inputs rather than images: decode
// one, Prepare it, let the image go, decode the next. The zero Input is
// not valid; make one with Prepare or PrepareReader.
type Input struct{ x []float32 }

// Prepare reduces img to the model's input, as ClassifyBatch does.
func (c *Classifier) Prepare(img image.Image) (Input, error) {
	if img == nil {
		return Input{}, ErrNilImage
	}
	return Input{c.pre.Image(img)}, nil
}

// PrepareReader decodes one image from r and reduces it to the model's
// input: DecodePrepare without a context or the format. It reads r to the
// end of the image, at most imaging.MaxImageBytes bytes.
func (c *Classifier) PrepareReader(r io.Reader) (Input, error) {
	in, _, err := c.DecodePrepare(context.Background(), r)
	return in, err
}

// ClassifyInputs classifies prepared inputs with one run of model.onnx and
// returns one Result per input, in order; see ClassifyBatch, also for ctx.
// An input not made by this Classifier's Prepare (the zero Input, or one
// of another model's size) is an error naming its index and wrapping
// ErrInputShape.
func (c *Classifier) ClassifyInputs(ctx context.Context, inputs []Input) ([]Result, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	batch, shape, err := c.stack(inputs)
	if err != nil {
		return nil, err
	}
	return c.classifyNCHW(ctx, batch, shape)
}

// stack joins prepared inputs into one NCHW batch.
func (c *Classifier) stack(inputs []Input) ([]float32, []int64, error) {
	size := c.pre.ImageSize()
	batch := make([]float32, 0, len(inputs)*size)
	for i, in := range inputs {
		if len(in.x) != size {
			return nil, nil, fmt.Errorf("%w: input %d has %d values, want %d: make inputs with this model's Prepare", ErrInputShape, i, len(in.x), size)
		}
		batch = append(batch, in.x...)
	}
	return batch, c.batchShape(len(inputs)), nil
}

// classifyNCHW scores a preprocessed batch (score) and ranks the classes
// of each image.
func (c *Classifier) classifyNCHW(ctx context.Context, batch []float32, shape []int64) ([]Result, error) {
	k, s, n := len(c.classes), c.manifest.FeatureDim, c.shortlistSize
	sc, err := c.score(ctx, batch, shape, c.openSet.needsFeature())
	if err != nil {
		return nil, err
	}
	results := make([]Result, shape[0])
	for i := range results {
		row := sc.scores[i*k : (i+1)*k]
		var preds []Prediction
		if sc.shortlisted == nil {
			preds, err = rankClasses(row, c.classes, c.topK)
		} else {
			preds, err = rankShortlist(row, sc.shortlisted[i*n:(i+1)*n], c.classes, c.topK)
		}
		if err != nil {
			return nil, fmt.Errorf("image %d: %w", i, err)
		}
		results[i] = Result{Predictions: preds}
		var zi []float32
		if sc.features != nil {
			zi = sc.features[i*s : (i+1)*s]
		}
		c.openSet.apply(row, zi, &results[i])
	}
	return results, nil
}

// scoredBatch is a batch's scores as Results are made from them.
type scoredBatch struct {
	// scores [N, K]: every class's exact score, or under a shortlist the
	// exact scores of the shortlisted classes and the approximate ones of
	// the rest, raised to at least the largest shortlisted score.
	scores []float32
	// shortlisted [N, n] are the columns scored exactly; nil when every
	// class was.
	shortlisted []int64
	// features [N, S] are the backbone features; nil unless asked for or a
	// shortlist ran.
	features []float32
}

// ShortlistMaxBatch is the batch size from which a model with a shortlist
// scores every class exactly anyway: the exact Gemm reads the class table
// once per batch, so its cost per image falls with the batch, while the
// shortlist's gathers its rows per image. Measured at 5000 classes (one
// thread, CPU per image): batch 8, 827 us exact against 735 us shortlist;
// batch 16, 680 against 731; batch 256, 484 against 690
// (docs/classes.md).
const ShortlistMaxBatch = 16

// score scores a preprocessed NCHW batch: model.onnx, and backbone.onnx
// too when withFeatures and model.onnx does not output them; under a
// shortlist, for batches smaller than ShortlistMaxBatch, backbone.onnx
// then shortlist.onnx, whose features serve the unknown scores as well.
func (c *Classifier) score(ctx context.Context, batch []float32, shape []int64, withFeatures bool) (scoredBatch, error) {
	if c.shortlist == nil || shape[0] >= ShortlistMaxBatch {
		scores, z, err := c.runModel(ctx, batch, shape)
		if err != nil || !withFeatures {
			return scoredBatch{scores: scores}, err
		}
		if z == nil {
			z, err = c.features(ctx, batch, shape)
		}
		return scoredBatch{scores: scores, features: z}, err
	}
	z, err := c.features(ctx, batch, shape)
	if err != nil {
		return scoredBatch{}, err
	}
	k, n := len(c.classes), c.shortlistSize
	r, err := runLocked(c, func() (shortlistRun, error) {
		return c.shortlist.runShortlist(ctx, z, []int64{shape[0], int64(c.manifest.FeatureDim)}, n, k)
	})
	if err != nil {
		return scoredBatch{}, err
	}
	// A class left out is taken to be no closer than the farthest one
	// shortlisted, so its approximate score is raised to at least that
	// exact score: the minimum of the row, which the nearest-distance and
	// Mahalanobis unknown scores read, is then the exact one whenever the
	// exact closest class was shortlisted.
	scores := r.approx
	for row := range int(shape[0]) {
		exact, cols := r.exact[row*n:(row+1)*n], r.classes[row*n:(row+1)*n]
		floor := slices.Max(exact)
		out := scores[row*k : (row+1)*k]
		for c, v := range out {
			out[c] = max(v, floor)
		}
		for j, col := range cols {
			out[col] = exact[j]
		}
	}
	return scoredBatch{scores: scores, shortlisted: r.classes, features: z}, nil
}

// features runs backbone.onnx on a preprocessed NCHW batch, [N, S]
// row-major; with the manifest's test_flip, the mean of each image's and
// its mirror's feature, as the calibration's held-out features were taken.
// The unknown scores that read the feature (gauss.UnknownScore.NeedsFeature)
// take it from here.
func (c *Classifier) features(ctx context.Context, batch []float32, shape []int64) ([]float32, error) {
	s := c.manifest.FeatureDim
	return runLocked(c, func() ([]float32, error) {
		z, err := c.backbone.run(ctx, batch, shape, s)
		if err != nil || !c.manifest.Classifier.TestFlip {
			return z, err
		}
		mirrored, err := c.backbone.run(ctx, mirror(batch, shape), shape, s)
		if err != nil {
			return nil, err
		}
		return gauss.MeanScores(z, mirrored), nil
	})
}

// Scores returns model.onnx's score of every class for every prepared
// input (exact, also under a shortlist), a row of len(Classes()) per
// input, in Classes() order: the squared Mahalanobis distance plus the
// class's bias (gauss.ClassifierTables),
// averaged with the mirror's under the test-time flip, as ClassifyInputs
// ranks them. An input not made by this Classifier's Prepare wraps
// ErrInputShape; ctx stops the run as in ClassifyBatch.
func (c *Classifier) Scores(ctx context.Context, inputs []Input) ([][]float32, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	batch, shape, err := c.stack(inputs)
	if err != nil {
		return nil, err
	}
	scores, _, err := c.runModel(ctx, batch, shape)
	if err != nil {
		return nil, err
	}
	return rows(scores, len(c.classes)), nil
}

// runModel runs model.onnx on a preprocessed NCHW batch: scores [N, K]
// row-major, and where the model outputs them (modelFeatures) the
// backbone features [N, S], else nil. With the manifest's test_flip it
// runs the batch's horizontal mirror too and returns the means of the two
// (gauss.MeanScores), as training evaluated the model and as features
// averages the features.
func (c *Classifier) runModel(ctx context.Context, batch []float32, shape []int64) (scores, features []float32, err error) {
	widths := []int{len(c.classes)}
	if c.modelFeatures {
		widths = append(widths, c.manifest.FeatureDim)
	}
	out, err := runLocked(c, func() ([][]float32, error) {
		out, err := c.model.runOutputs(ctx, batch, shape, widths...)
		if err != nil || !c.manifest.Classifier.TestFlip {
			return out, err
		}
		mirrored, err := c.model.runOutputs(ctx, mirror(batch, shape), shape, widths...)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i] = gauss.MeanScores(out[i], mirrored[i])
		}
		return out, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if c.modelFeatures {
		return out[0], out[1], nil
	}
	return out[0], nil, nil
}

// mirror returns the left-right mirror of every image of an NCHW batch.
func mirror(batch []float32, shape []int64) []float32 {
	ch, h, w := int(shape[1]), int(shape[2]), int(shape[3])
	size := ch * h * w
	out := make([]float32, len(batch))
	for i := 0; i+size <= len(batch); i += size {
		imaging.FlipHorizontal(batch[i:i+size], out[i:i+size], ch, h, w)
	}
	return out
}

// ClassifyFile decodes the image file at path (imaging.DecodeImage, with the
// WithMaxPixels limit) and classifies it. Only a regular file is read: a
// named pipe or device is refused at once (ErrNotRegular; use
// ClassifyReader to read one). Errors name the file.
func (c *Classifier) ClassifyFile(ctx context.Context, path string) (Result, error) {
	in, err := c.PrepareFile(path)
	if err != nil {
		return Result{}, err
	}
	rs, err := c.ClassifyInputs(ctx, []Input{in})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", path, err)
	}
	return rs[0], nil
}

// PrepareFile decodes the regular file at path (PrepareReader; a named
// pipe or device is ErrNotRegular) and reduces it to the model's input;
// errors name the file.
func (c *Classifier) PrepareFile(path string) (Input, error) {
	f, _, err := bounded.OpenRegular(path)
	if err != nil {
		return Input{}, err
	}
	defer f.Close()
	in, err := c.PrepareReader(f)
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", path, err)
	}
	return in, nil
}

// ClassifyReader decodes one image from r (PrepareReader) and classifies
// it. It reads r to the end of the image, at most imaging.MaxImageBytes bytes.
func (c *Classifier) ClassifyReader(ctx context.Context, r io.Reader) (Result, error) {
	in, err := c.PrepareReader(r)
	if err != nil {
		return Result{}, err
	}
	rs, err := c.ClassifyInputs(ctx, []Input{in})
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// Embed returns the backbone feature of every image, [N][S] with S the
// manifest's feature_dim, preprocessed as in ClassifyBatch, which says
// what ctx does. These are the features the class prototypes live in.
func (c *Classifier) Embed(ctx context.Context, imgs []image.Image) ([][]float32, error) {
	if len(imgs) == 0 {
		return nil, nil
	}
	batch, shape, err := c.preprocess(ctx, imgs)
	if err != nil {
		return nil, err
	}
	return c.embedNCHW(ctx, batch, shape)
}

// EmbedInputs returns the backbone feature of every prepared input, as
// Embed does for images. An input not made by this Classifier's Prepare
// wraps ErrInputShape.
func (c *Classifier) EmbedInputs(ctx context.Context, inputs []Input) ([][]float32, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	batch, shape, err := c.stack(inputs)
	if err != nil {
		return nil, err
	}
	return c.embedNCHW(ctx, batch, shape)
}

// Mirror returns the left-right mirror of a prepared input: what the
// test-time flip (gauss.ClassifierOptions.TestFlip) scores beside the
// input, and what a new class's statistics take in too. An input not made
// by this Classifier's Prepare wraps ErrInputShape.
func (c *Classifier) Mirror(in Input) (Input, error) {
	batch, shape, err := c.stack([]Input{in})
	if err != nil {
		return Input{}, err
	}
	return Input{mirror(batch, shape)}, nil
}

// embedNCHW runs backbone.onnx on a preprocessed NCHW batch: one feature
// row per image.
func (c *Classifier) embedNCHW(ctx context.Context, batch []float32, shape []int64) ([][]float32, error) {
	s := c.manifest.FeatureDim
	features, err := runLocked(c, func() ([]float32, error) { return c.backbone.run(ctx, batch, shape, s) })
	if err != nil {
		return nil, err
	}
	return rows(features, s), nil
}

// Transport maps features of the previous task's backbone into the current
// feature space with the adapter A (docs/method.md, "Stage II"): [N][S] in, [N][S]
// out. Every row must have S finite values (else ErrInputShape). Without an
// adapter it returns ErrNoAdapter. ctx stops the run as in ClassifyBatch.
func (c *Classifier) Transport(ctx context.Context, oldFeatures [][]float32) ([][]float32, error) {
	if c.adapter == nil {
		return nil, fmt.Errorf("model %s: %w (trained on one task)", c.dir, ErrNoAdapter)
	}
	if len(oldFeatures) == 0 {
		return nil, nil
	}
	s := c.manifest.FeatureDim
	flat := make([]float32, 0, len(oldFeatures)*s)
	for i, row := range oldFeatures {
		if len(row) != s {
			return nil, fmt.Errorf("%w: feature row %d has %d values, want %d", ErrInputShape, i, len(row), s)
		}
		for j, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("%w: feature row %d value %d is %v", ErrInputShape, i, j, v)
			}
		}
		flat = append(flat, row...)
	}
	shape := []int64{int64(len(oldFeatures)), int64(s)}
	moved, err := runLocked(c, func() ([]float32, error) { return c.adapter.run(ctx, flat, shape, s) })
	if err != nil {
		return nil, err
	}
	return rows(moved, s), nil
}

// preprocess turns images into one NCHW float32 batch, stopping between
// images once ctx is done.
func (c *Classifier) preprocess(ctx context.Context, imgs []image.Image) ([]float32, []int64, error) {
	size := c.pre.ImageSize()
	batch := make([]float32, len(imgs)*size)
	for i, img := range imgs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if img == nil {
			return nil, nil, fmt.Errorf("image %d: %w", i, ErrNilImage)
		}
		copy(batch[i*size:], c.pre.Image(img))
	}
	return batch, c.batchShape(len(imgs)), nil
}

// batchShape is the NCHW shape of a batch of n images.
func (c *Classifier) batchShape(n int) []int64 {
	return []int64{int64(n), int64(c.pre.Channels), int64(c.pre.Height), int64(c.pre.Width)}
}

// runLocked runs f under the read lock, unless the Classifier is closed.
func runLocked[T any](c *Classifier, f func() (T, error)) (T, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		var zero T
		return zero, ErrClosed
	}
	return f()
}

// rows splits a row-major [N, width] slice into N rows sharing its memory.
func rows(flat []float32, width int) [][]float32 {
	out := make([][]float32, len(flat)/width)
	for i := range out {
		out[i] = flat[i*width : (i+1)*width : (i+1)*width]
	}
	return out
}
