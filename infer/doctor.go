package infer

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	ort "github.com/yalue/onnxruntime_go"
)

// CheckSettings say what CheckProviders measures. Zero fields take the
// defaults in brackets.
type CheckSettings struct {
	// Providers to check after the CPU, which is always checked first as
	// the reference [ProviderCUDA, ProviderTensorRT].
	Providers []Provider
	// LatencyRuns is how many single-image calls the batch-1 latency is
	// measured over, after 10 unmeasured ones [200].
	LatencyRuns int
	// Batch is the batch size of the throughput measurement [256].
	Batch int
	// MinDuration is how long the throughput measurement runs at least, and
	// for at least 3 batches, after one unmeasured batch [2s].
	MinDuration time.Duration
}

func (s *CheckSettings) defaults() {
	if s.Providers == nil {
		s.Providers = []Provider{ProviderCUDA, ProviderTensorRT}
	}
	if s.LatencyRuns <= 0 {
		s.LatencyRuns = 200
	}
	if s.Batch <= 0 {
		s.Batch = 256
	}
	if s.MinDuration <= 0 {
		s.MinDuration = 2 * time.Second
	}
}

// ProviderReport is the result of CheckProviders; it marshals to the JSON
// that `bicyc-infer doctor` prints.
type ProviderReport struct {
	Runtime string `json:"onnx_runtime"` // version of the loaded library
	Library string `json:"library"`      // its path
	Model   string `json:"model"`
	Images  int    `json:"images"`
	// Synthetic is true when no images were given and CheckProviders made
	// its own (syntheticImages).
	Synthetic bool          `json:"synthetic_images"`
	Classes   int           `json:"classes"`
	Libraries []LibraryInfo `json:"provider_libraries"`
	Providers []ProviderRun `json:"providers"`
}

// LibraryInfo is one GPU provider library beside the loaded ONNX Runtime
// library: whether it is there, and which libraries it needs that the
// dynamic loader would not find.
type LibraryInfo struct {
	File    string   `json:"file"`
	Present bool     `json:"present"`
	Missing []string `json:"missing,omitempty"`
}

// ProviderRun is one provider's part of a ProviderReport. Error is set when
// the provider could not open or run the model; the other fields are then
// zero.
//
// The differences compare every class's distance of every image with the
// CPU's:
//
//	MaxAbsDiff = max |d_p - d_cpu|
//	MaxRelDiff = max |d_p - d_cpu| / max(|d_cpu|, 1)
//
// (the floor of 1 keeps near-zero distances from inflating the ratio).
type ProviderRun struct {
	Provider    Provider `json:"provider"`
	Error       string   `json:"error,omitempty"`
	OpenSeconds float64  `json:"open_seconds,omitempty"`
	// MaxAbsDiff and MaxRelDiff are nil for the CPU and a provider that
	// did not run.
	MaxAbsDiff *float64 `json:"max_abs_diff,omitempty"`
	MaxRelDiff *float64 `json:"max_rel_diff,omitempty"`
	// SameTop1 counts the images whose closest class is the CPU's.
	SameTop1 int `json:"same_top1,omitempty"`
	// P50Batch1 and P99Batch1 are the latency of one single-image call,
	// in milliseconds, preprocessing excluded.
	P50Batch1 float64 `json:"p50_ms_batch1,omitempty"`
	P99Batch1 float64 `json:"p99_ms_batch1,omitempty"`
	// Throughput is images per second at Batch images per call.
	Throughput float64 `json:"images_per_second,omitempty"`
	Batch      int     `json:"batch,omitempty"`
}

// CheckProviders is the self-check of a GPU installation: it opens the model
// in dir on the CPU and on each provider of s, classifies the same images
// with each, compares every class distance with the CPU's, and measures
// single-image latency and batch throughput. imgs are the images; with none
// it makes 64 deterministic synthetic ones of the model's input size. opts
// apply to every provider (WithEngineCache and WithFP16 to TensorRT alone);
// WithProvider and WithTopK are overridden. When ctx is done it stops (see
// Open and ClassifyBatch) and returns an error wrapping ctx.Err().
//
// A provider that cannot run is reported with its Error, not returned as
// one; an error is returned only when the CPU cannot run the model.
func CheckProviders(ctx context.Context, dir string, imgs []image.Image, s CheckSettings, opts ...Option) (*ProviderReport, error) {
	s.defaults()
	report := &ProviderReport{Model: dir}
	cpuRun, cpu, err := openTimed(ctx, dir, ProviderCPU, opts)
	if err != nil {
		return nil, err
	}
	defer cpu.Close()
	report.Runtime, report.Library = runtimeLibrary()
	report.Libraries = providerLibraries(filepath.Dir(report.Library))
	report.Classes = len(cpu.Classes())
	if len(imgs) == 0 {
		imgs = syntheticImages(cpu.pre.Channels, cpu.pre.Height, cpu.pre.Width, 64)
		report.Synthetic = true
	}
	report.Images = len(imgs)
	inputs := make([]Input, len(imgs))
	for i, img := range imgs {
		if inputs[i], err = cpu.Prepare(img); err != nil {
			return nil, fmt.Errorf("image %d: %w", i, err)
		}
	}
	want, err := distances(ctx, cpu, inputs, s.Batch)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	if err := measure(ctx, cpu, inputs, s, &cpuRun); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	cpuRun.SameTop1 = len(inputs)
	report.Providers = append(report.Providers, cpuRun)

	for _, p := range s.Providers {
		if p == ProviderCPU {
			continue
		}
		run, c, err := openTimed(ctx, dir, p, opts)
		if err == nil {
			err = compare(ctx, c, inputs, want, s, &run)
			c.Close()
		}
		if err != nil {
			run = ProviderRun{Provider: p, Error: err.Error()}
		}
		report.Providers = append(report.Providers, run)
	}
	return report, nil
}

// openTimed opens dir on provider p with every class in each Result.
func openTimed(ctx context.Context, dir string, p Provider, opts []Option) (ProviderRun, *Classifier, error) {
	opts = append(slices.Clone(opts), WithProvider(p), WithTopK(math.MaxInt32))
	if p != ProviderTensorRT {
		opts = append(opts, WithEngineCache(""), WithFP16(false))
	}
	start := time.Now()
	c, err := Open(ctx, dir, opts...)
	return ProviderRun{Provider: p, OpenSeconds: time.Since(start).Seconds()}, c, err
}

// compare classifies inputs on c, compares the distances with want (the
// CPU's) and measures c.
func compare(ctx context.Context, c *Classifier, inputs []Input, want [][]Prediction, s CheckSettings, run *ProviderRun) error {
	got, err := distances(ctx, c, inputs, s.Batch)
	if err != nil {
		return err
	}
	var maxAbs, maxRel float64
	for i := range want {
		if got[i][0].ClassID == want[i][0].ClassID {
			run.SameTop1++
		}
		byClass := make(map[int]float32, len(got[i]))
		for _, p := range got[i] {
			byClass[p.ClassID] = p.Distance
		}
		for _, q := range want[i] {
			d, ok := byClass[q.ClassID]
			if !ok {
				return fmt.Errorf("image %d: class %d missing from the result", i, q.ClassID)
			}
			diff := math.Abs(float64(d) - float64(q.Distance))
			maxAbs = max(maxAbs, diff)
			maxRel = max(maxRel, diff/max(math.Abs(float64(q.Distance)), 1))
		}
	}
	run.MaxAbsDiff, run.MaxRelDiff = &maxAbs, &maxRel
	return measure(ctx, c, inputs, s, run)
}

// distances classifies inputs in batches and returns every class's
// prediction for each input.
func distances(ctx context.Context, c *Classifier, inputs []Input, batch int) ([][]Prediction, error) {
	out := make([][]Prediction, 0, len(inputs))
	for start := 0; start < len(inputs); start += batch {
		rs, err := c.ClassifyInputs(ctx, inputs[start:min(start+batch, len(inputs))])
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			out = append(out, r.Predictions)
		}
	}
	return out, nil
}

// measure times single-image calls and full batches on c.
func measure(ctx context.Context, c *Classifier, inputs []Input, s CheckSettings, run *ProviderRun) error {
	const warmUp = 10
	times := make([]time.Duration, 0, s.LatencyRuns)
	for i := range warmUp + s.LatencyRuns {
		in := inputs[i%len(inputs) : i%len(inputs)+1]
		start := time.Now()
		if _, err := c.ClassifyInputs(ctx, in); err != nil {
			return err
		}
		if i >= warmUp {
			times = append(times, time.Since(start))
		}
	}
	slices.Sort(times)
	ms := func(q float64) float64 {
		return float64(times[int(q*float64(len(times)-1))].Nanoseconds()) / 1e6
	}
	run.P50Batch1, run.P99Batch1 = ms(0.5), ms(0.99)

	batch := make([]Input, s.Batch)
	for i := range batch {
		batch[i] = inputs[i%len(inputs)]
	}
	// The first batch pays for lazy set-up (a TensorRT engine for this
	// shape, cuDNN's algorithm search): not measured.
	if _, err := c.ClassifyInputs(ctx, batch); err != nil {
		return err
	}
	n := 0
	start := time.Now()
	for n < 3 || time.Since(start) < s.MinDuration {
		if _, err := c.ClassifyInputs(ctx, batch); err != nil {
			return err
		}
		n++
	}
	run.Throughput = float64(n*s.Batch) / time.Since(start).Seconds()
	run.Batch = s.Batch
	return nil
}

// runtimeLibrary returns the version and path of the loaded ONNX Runtime
// library.
func runtimeLibrary() (version, path string) {
	runtimeEnv.mu.Lock()
	defer runtimeEnv.mu.Unlock()
	return ort.GetVersion(), runtimeEnv.library
}

// providerLibraries reports the GPU provider libraries in dir, where ONNX
// Runtime looks for them.
func providerLibraries(dir string) []LibraryInfo {
	var out []LibraryInfo
	for _, name := range []string{providersSharedLib, providersCUDALib, providersTensorRTLib} {
		path := filepath.Join(dir, name)
		info := LibraryInfo{File: path}
		if _, err := os.Stat(path); err == nil {
			info.Present = true
			info.Missing = missingLibraries(path)
		}
		out = append(out, info)
	}
	return out
}

// syntheticImages returns n deterministic images of the given size: smooth
// random blobs on a gradient, so every image differs and covers the range of
// pixel values, as photographs do.
func syntheticImages(channels, height, width, n int) []image.Image {
	rng := rand.New(rand.NewPCG(29, 1))
	out := make([]image.Image, n)
	for k := range out {
		img := image.NewRGBA(image.Rect(0, 0, width, height))
		type blob struct{ x, y, r, v [3]float64 }
		var blobs [4]blob
		for b := range blobs {
			for c := range 3 {
				blobs[b].x[c] = rng.Float64() * float64(width)
				blobs[b].y[c] = rng.Float64() * float64(height)
				blobs[b].r[c] = (0.1 + 0.4*rng.Float64()) * float64(max(width, height))
				blobs[b].v[c] = rng.Float64()
			}
		}
		for y := range height {
			for x := range width {
				var px [3]uint8
				for c := range 3 {
					v := 0.3 * float64(x+y) / float64(width+height)
					for _, b := range blobs {
						dx, dy := float64(x)-b.x[c], float64(y)-b.y[c]
						v += b.v[c] * math.Exp(-(dx*dx+dy*dy)/(b.r[c]*b.r[c]))
					}
					px[c] = uint8(255 * min(v, 1))
				}
				if channels == 1 {
					px[1], px[2] = px[0], px[0]
				}
				img.SetRGBA(x, y, color.RGBA{px[0], px[1], px[2], 255})
			}
		}
		out[k] = img
	}
	return out
}
