package infer

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
)

// DefaultMaxPixels is the largest width*height an image header may declare
// before infer refuses to decode it: imaging.MaxImagePixels (16 Mpx, e.g.
// 4096x4096), the limit training's image folders use too. A guard against
// decompression bombs, whose small files declare huge images; one image of
// this size peaks near 256 MiB while it is decoded and reduced to the
// network's input.
const DefaultMaxPixels = imaging.MaxImagePixels

// DefaultThreads is the default number of ONNX Runtime intra-op threads per
// session. One thread per call, with calls running in parallel, keeps p99
// latency low on two cores (docs/toolchain.md, "ONNX Runtime"). Measured with
// BenchmarkClassifyThreads (1x28x28 convnet, two goroutines, two shared
// cores): 1 thread p50 183 us, p99 4.5 ms, 194 us/op; 2 threads p99 12 ms,
// 335 us/op; ONNX Runtime's default (0) p99 15 ms, 302 us/op.
const DefaultThreads = 1

// Option configures Open. Defaults are applied first, then every option,
// then the result is validated as a whole.
type Option func(*config)

// config is what the options set; see the With* functions for meanings.
type config struct {
	provider    Provider
	threads     int
	libraryPath string
	topK        int
	engineCache string
	fp16        bool
	maxPixels   int64
	log         io.Writer
	acceptRate  float64
	threshold   float64
	score       gauss.UnknownScore
	scoreErr    error
	exactScores bool
}

func defaultConfig() config {
	return config{
		provider:  ProviderAuto,
		threads:   DefaultThreads,
		maxPixels: DefaultMaxPixels,
	}
}

// WithProvider selects the execution provider (default ProviderAuto).
func WithProvider(p Provider) Option { return func(c *config) { c.provider = p } }

// WithThreads sets ONNX Runtime's intra-op threads per session (default
// DefaultThreads); 0 lets ONNX Runtime use one per core.
func WithThreads(n int) Option { return func(c *config) { c.threads = n } }

// WithLibraryPath names the ONNX Runtime shared library (default
// DefaultLibraryPath). See InitRuntime: a process loads only one.
func WithLibraryPath(path string) Option { return func(c *config) { c.libraryPath = path } }

// WithTopK sets how many predictions a Result holds, closest first (default
// the bundle's classifier top_k, or gauss.DefaultTopK where that is 0;
// always at most the number of classes).
func WithTopK(k int) Option { return func(c *config) { c.topK = k } }

// WithEngineCache names a directory where the TensorRT provider stores the
// engines it builds, so later processes load them instead of spending
// seconds to minutes building them again. It applies to ProviderTensorRT
// and ProviderAuto.
func WithEngineCache(dir string) Option { return func(c *config) { c.engineCache = dir } }

// WithFP16 lets the TensorRT provider run in half precision where it chooses
// to (faster, with distances that differ from the float32 ones in about the
// third significant digit). It applies to ProviderTensorRT and ProviderAuto.
func WithFP16(on bool) Option { return func(c *config) { c.fp16 = on } }

// WithMaxPixels sets the largest width*height an image header may declare
// (default DefaultMaxPixels); larger images are refused before decoding.
func WithMaxPixels(n int64) Option { return func(c *config) { c.maxPixels = n } }

// WithLog sets where Open writes its notices, one line each: ProviderAuto's
// line saying which provider runs and why the others do not, and a
// warning for a model directory whose manifest has no digest to verify it
// against (bundle.DigestFile). By default (and with nil) infer writes
// nothing: a library does not log unless its caller asks.
func WithLog(w io.Writer) Option { return func(c *config) { c.log = w } }

// WithAcceptRate sets the share of known-class images the Classifier
// accepts, in (0, 1]; the rest, and images farther from every class, are
// Unknown. The threshold is the rate-quantile of the unknown scores of the
// held-out images the model was calibrated on (default: the manifest's
// accept_rate, normally 0.95). Open fails with ErrNotCalibrated on a model
// without calibration.
func WithAcceptRate(rate float64) Option { return func(c *config) { c.acceptRate = rate } }

// WithUnknownThreshold sets the unknown-score threshold directly (> 0),
// overriding the calibration; on a model without calibration it applies to
// the smallest squared Mahalanobis distance.
func WithUnknownThreshold(t float64) Option { return func(c *config) { c.threshold = t } }

// WithUnknownScore picks the unknown score by name (gauss.UnknownScores:
// "mahalanobis", "relative-mahalanobis", "energy", ...; default the
// manifest's, gauss.ScoreMahalanobis on a model calibrated before scores
// could be chosen); the empty name keeps the manifest's. Its threshold is the acceptance rate's quantile of the
// score's held-out values (WithAcceptRate, else the manifest's rate) unless
// WithUnknownThreshold sets it. A model whose calibration lacks the score's
// held-out values fails to open (gauss.ErrNoReference: calibrate it again);
// one without calibration has gauss.ScoreNearestDistance only.
func WithUnknownScore(name string) Option {
	return func(c *config) {
		c.score, c.scoreErr = "", nil
		if name != "" {
			c.score, c.scoreErr = gauss.ParseUnknownScore(name)
		}
	}
}

// WithExactScores scores every class exactly even when the model
// directory has a shortlist (Classifier.ShortlistSize): what the model
// answered before it had one, at the exact scores' cost (at batch 1 about
// 2.4 times the shortlist's at 5000 classes).
func WithExactScores(on bool) Option { return func(c *config) { c.exactScores = on } }

// validate reports every invalid setting at once.
func (c *config) validate() error {
	var errs []error
	if _, err := ParseProvider(string(c.provider)); err != nil {
		errs = append(errs, err)
	}
	if c.threads < 0 {
		errs = append(errs, fmt.Errorf("threads %d is negative", c.threads))
	}
	if c.scoreErr != nil {
		errs = append(errs, c.scoreErr)
	}
	if c.topK < 0 {
		errs = append(errs, fmt.Errorf("top-k %d is negative", c.topK))
	}
	if c.maxPixels < 1 {
		errs = append(errs, fmt.Errorf("max pixels %d is not positive", c.maxPixels))
	}
	if c.acceptRate != 0 {
		if err := gauss.ValidateAcceptRate(c.acceptRate); err != nil {
			errs = append(errs, err)
		}
	}
	if c.threshold != 0 && !(c.threshold > 0 && !math.IsInf(c.threshold, 1)) {
		errs = append(errs, fmt.Errorf("unknown threshold %v: want a finite value > 0", c.threshold))
	}
	if c.acceptRate != 0 && c.threshold != 0 {
		errs = append(errs, errors.New("set an acceptance rate or an unknown threshold, not both"))
	}
	withoutTensorRT := c.provider == ProviderCPU || c.provider == ProviderCUDA
	if withoutTensorRT && c.engineCache != "" {
		errs = append(errs, fmt.Errorf("an engine cache applies to the tensorrt provider, not %s", c.provider))
	}
	if withoutTensorRT && c.fp16 {
		errs = append(errs, fmt.Errorf("fp16 applies to the tensorrt provider, not %s", c.provider))
	}
	if c.log == nil {
		c.log = io.Discard
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return nil
}
