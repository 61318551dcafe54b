package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
)

// classifyOptions are the root command's flags and arguments.
type classifyOptions struct {
	model   modelOptions
	json    bool
	batch   int
	paths   []string
	collect collectOptions
}

// source is one image to classify: a file, or standard input ("-").
type source struct {
	name string // as printed: the path, or "-"
	err  error  // set when the path could not even be listed
}

// record is one line of --json output.
type record struct {
	File        string             `json:"file"`
	Predictions []infer.Prediction `json:"predictions,omitempty"`
	// Confidence, UnknownScore and Unknown as in infer.Result.
	Confidence   float64  `json:"confidence,omitempty"`
	UnknownScore *float64 `json:"unknown_score,omitempty"`
	// UnknownScoreName names the score (infer.Result.UnknownScoreName).
	UnknownScoreName string `json:"unknown_score_name,omitempty"`
	Unknown          bool   `json:"unknown"`
	// Collected is where --collect-unknown saved the image.
	Collected string `json:"collected,omitempty"`
	Error     string `json:"error,omitempty"`
}

// runClassify classifies every image the paths name, in order, batch by
// batch, printing each image's result (or error) as soon as its batch is
// done. It returns an error when any image failed.
func runClassify(ctx context.Context, o *classifyOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(o.paths) == 0 {
		return errors.New("no images: give image files, directories or - for standard input (see --help)")
	}
	if o.batch < 1 {
		return fmt.Errorf("--batch %d: want >= 1", o.batch)
	}
	sources := expandPaths(o.paths, stderr)
	if len(sources) == 0 {
		return errors.New("no image files found in the given directories")
	}
	collector, err := o.collect.collector()
	if err != nil {
		return err
	}
	c, err := o.model.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	infer.LimitMemory(classifyCeiling(o.model.maxPixels, collector != nil))

	out := newPrinter(o.json, stdout, stderr, sources, c)
	r := &imageReader{ctx: ctx, c: c, stdin: stdin, maxPixels: o.model.maxPixels, keepBytes: collector != nil}
	failed := 0
	for start := 0; start < len(sources); {
		chunk := sources[start:min(start+o.batch, len(sources))]
		batch := r.loadBatch(chunk)
		results := classifyLoaded(ctx, c, batch)
		for i, l := range batch {
			name := chunk[i].name
			if l.err != nil {
				failed++
				out.failure(name, l.err)
				continue
			}
			saved := ""
			if results[i].Unknown && collector != nil {
				saved = collect(collector, name, l, stderr)
			}
			out.result(name, results[i], saved)
		}
		start += len(batch)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d images failed", failed, len(sources))
	}
	return nil
}

// loaded is one source read and reduced to the model's input, waiting for
// its batch to be classified.
type loaded struct {
	in  infer.Input
	err error // the source could not be read, decoded or classified
	// raw and format are the bytes read and their format, kept for
	// --collect-unknown; rawErr says why raw is missing.
	raw    []byte
	format string
	rawErr error
}

// imageReader reads sources for classification, one image at a time.
type imageReader struct {
	ctx       context.Context // stops a decode
	c         *infer.Classifier
	stdin     io.Reader
	maxPixels int64
	keepBytes bool // keep each image's bytes (loaded.raw) for collection
}

// loadBatch loads sources in order (load) and returns one batch: all of
// them, or fewer (at least one) once the bytes kept for collection reach
// collectHeldBytes, so a batch of large files never holds all of their
// bytes at once.
func (r *imageReader) loadBatch(sources []source) []loaded {
	var batch []loaded
	held := 0
	for _, s := range sources {
		if held >= collectHeldBytes {
			break
		}
		l := r.load(s)
		held += len(l.raw)
		batch = append(batch, l)
	}
	return batch
}

// classifyLoaded classifies the loaded images without an error in runs of
// at most infer.RunBatch images (infer.ClassifyRuns). If that fails, it classifies them one by one
// so the error lands on the image that caused it.
func classifyLoaded(ctx context.Context, c *infer.Classifier, batch []loaded) []infer.Result {
	var inputs []infer.Input
	var at []int // batch index of each input
	for i, l := range batch {
		if l.err == nil {
			inputs = append(inputs, l.in)
			at = append(at, i)
		}
	}
	results := make([]infer.Result, len(batch))
	batchResults, err := infer.ClassifyRuns(ctx, len(inputs), func(lo, hi int) ([]infer.Input, error) {
		return inputs[lo:hi], nil
	}, c.ClassifyInputs)
	for j, i := range at {
		if err == nil {
			results[i] = batchResults[j]
			continue
		}
		var one []infer.Result
		if one, batch[i].err = c.ClassifyInputs(ctx, inputs[j:j+1]); batch[i].err == nil {
			results[i] = one[0]
		}
	}
	return results
}

// collect saves the bytes of an image answered unknown, as read when it
// was classified, and returns the path, or "" after printing why not; a
// full collection is a warning, not a failure of the image.
func collect(c *infer.Collector, name string, l loaded, stderr io.Writer) string {
	err := l.rawErr
	if err == nil {
		var path string
		if path, _, err = c.Save(l.raw, l.format); err == nil {
			return path
		}
	}
	fmt.Fprintf(stderr, "bicyc-infer: %s: not collected: %v\n", name, err)
	return ""
}

// expandPaths turns the arguments into image sources: files as given,
// directories walked recursively (in lexical order, data.ImageFiles) for
// regular image files, "-" as standard input. Image-named entries of a
// directory that are not regular files (named pipes, devices, sockets) are
// skipped with a line on stderr: opening a pipe would block the whole run.
// A path that cannot be listed becomes a source carrying its error, so it
// is reported in order with the rest.
func expandPaths(paths []string, stderr io.Writer) []source {
	var out []source
	for _, p := range paths {
		if p == "-" {
			out = append(out, source{name: p})
			continue
		}
		info, err := os.Stat(p)
		if err != nil || !info.IsDir() {
			out = append(out, source{name: p, err: withoutPath(err)})
			continue
		}
		files, skipped, err := data.ImageFiles(p)
		for _, f := range files {
			out = append(out, source{name: f})
		}
		for _, s := range skipped {
			fmt.Fprintf(stderr, "bicyc-infer: skipping %v\n", s)
		}
		if err != nil {
			out = append(out, source{name: p, err: err})
		}
	}
	return out
}

// load decodes one source (standard input for "-") and reduces it to the
// model's input (infer's DecodePrepare, which releases a large decoded
// image at once). A named file is
// opened as given, so a pipe named on the command line is read; every
// source is read through imaging.DecodeImage's byte and pixel limits, so an
// endless one (/dev/zero) fails at once. With keepBytes the bytes read are
// kept (keepRest): collection saves them rather than reading the source
// again, which standard input would not allow.
func (r *imageReader) load(s source) loaded {
	if s.err != nil {
		return loaded{err: s.err}
	}
	src := r.stdin
	if s.name != "-" {
		f, err := os.Open(s.name)
		if err != nil {
			return loaded{err: withoutPath(err)}
		}
		defer f.Close()
		src = f
	}
	var raw bytes.Buffer
	if r.keepBytes {
		src = io.TeeReader(src, &raw)
	}
	var l loaded
	l.in, l.format, l.err = r.c.DecodePrepare(r.ctx, src)
	if l.err != nil {
		return l
	}
	if r.keepBytes {
		l.raw, l.rawErr = keepRest(src, &raw, imaging.MaxImageBytes(r.maxPixels))
	}
	return l
}

// keepRest reads what follows the decoded part of an image from tee (a
// reader that copies into raw): other frames of an animation, trailing
// chunks. A collected file is then the whole image as it arrived, not the
// prefix the decoder needed. An image longer than limit bytes in all is not
// kept.
func keepRest(tee io.Reader, raw *bytes.Buffer, limit int64) ([]byte, error) {
	if _, err := io.Copy(io.Discard, io.LimitReader(tee, limit+1-int64(raw.Len()))); err != nil {
		return nil, fmt.Errorf("reading the rest of the image: %w", err)
	}
	if int64(raw.Len()) > limit {
		return nil, fmt.Errorf("longer than %d bytes", limit)
	}
	return raw.Bytes(), nil
}

// withoutPath drops the path from a file-system error: every error line
// starts with the file name already.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// printer writes results as an aligned table (errors to stderr) or as JSON
// lines (errors inline, so the stream has one record per image).
type printer struct {
	json           bool
	stdout, stderr io.Writer
	enc            *json.Encoder
	fileWidth      int
	nameWidth      int
	header         bool
	calibrated     bool // the model gives probabilities
	decides        bool // the model can answer unknown
}

func newPrinter(asJSON bool, stdout, stderr io.Writer, sources []source, c *infer.Classifier) *printer {
	threshold, _ := c.UnknownThreshold()
	p := &printer{json: asJSON, stdout: stdout, stderr: stderr, enc: json.NewEncoder(stdout), fileWidth: len("FILE"), nameWidth: len("NAME"),
		calibrated: c.Calibrated(), decides: !math.IsInf(threshold, 1)}
	for _, s := range sources {
		p.fileWidth = max(p.fileWidth, len(s.name))
	}
	for _, class := range c.Classes() {
		p.nameWidth = max(p.nameWidth, len(class.Name))
	}
	return p
}

// result prints one image's answer. The table's PROB column is the
// calibrated posterior and its ANSWER column, on the first row, "known" or
// "unknown" with the unknown score's name and value; both are "-" when the model cannot say (no calibration, no
// --threshold).
func (p *printer) result(file string, r infer.Result, collected string) {
	if p.json {
		score := r.UnknownScore
		p.enc.Encode(record{File: file, Predictions: r.Predictions, Confidence: r.Confidence, UnknownScore: &score,
			UnknownScoreName: r.UnknownScoreName, Unknown: r.Unknown, Collected: collected})
		return
	}
	if !p.header {
		fmt.Fprintf(p.stdout, "%-*s  %4s  %5s  %-*s  %4s  %10s  %5s  %s\n", p.fileWidth, "FILE", "RANK", "CLASS", p.nameWidth, "NAME", "TASK", "DISTANCE", "PROB", "ANSWER")
		p.header = true
	}
	for rank, pr := range r.Predictions {
		prob, answer := "-", ""
		if p.calibrated {
			prob = fmt.Sprintf("%.3f", pr.Probability)
		}
		switch {
		case rank > 0:
		case !p.decides:
			answer = "  -"
		case r.Unknown:
			answer = fmt.Sprintf("  unknown (%s %.4g)", r.UnknownScoreName, r.UnknownScore)
		default:
			answer = fmt.Sprintf("  known (%s %.4g)", r.UnknownScoreName, r.UnknownScore)
		}
		fmt.Fprintf(p.stdout, "%-*s  %4d  %5d  %-*s  %4d  %10.5g  %5s%s\n", p.fileWidth, file, rank+1, pr.ClassID, p.nameWidth, pr.Name, pr.Task, pr.Distance, prob, answer)
	}
}

func (p *printer) failure(file string, err error) {
	if p.json {
		p.enc.Encode(record{File: file, Error: err.Error()})
		return
	}
	fmt.Fprintf(p.stderr, "bicyc-infer: %s: %v\n", file, err)
}
