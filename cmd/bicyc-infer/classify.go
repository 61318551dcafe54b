package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

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
	Unknown      bool     `json:"unknown"`
	// Collected is where --collect-unknown saved the image.
	Collected string `json:"collected,omitempty"`
	Error     string `json:"error,omitempty"`
}

// runClassify classifies every image the paths name, in order, batch by
// batch, printing each image's result (or error) as soon as its batch is
// done. It returns an error when any image failed.
func runClassify(o *classifyOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(o.paths) == 0 {
		return errors.New("no images: give image files, directories or - for standard input (see --help)")
	}
	if o.batch < 1 {
		return fmt.Errorf("--batch %d: want >= 1", o.batch)
	}
	sources := expandPaths(o.paths)
	if len(sources) == 0 {
		return errors.New("no image files found in the given directories")
	}
	collector, err := o.collect.collector()
	if err != nil {
		return err
	}
	c, err := o.model.open(stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	var stdinCopy bytes.Buffer
	if collector != nil {
		stdin = io.TeeReader(stdin, &stdinCopy)
	}

	out := newPrinter(o.json, stdout, stderr, sources, c)
	failed := 0
	for start := 0; start < len(sources); start += o.batch {
		chunk := sources[start:min(start+o.batch, len(sources))]
		errs := make([]error, len(chunk))
		var imgs []image.Image
		var at []int // chunk index of each decoded image
		for i, s := range chunk {
			var img image.Image
			if img, errs[i] = load(s, stdin, o.model.maxPixels); errs[i] == nil {
				imgs = append(imgs, img)
				at = append(at, i)
			}
		}
		results := make([]infer.Result, len(chunk))
		batchResults, err := c.ClassifyBatch(imgs)
		for j, i := range at {
			if err == nil {
				results[i] = batchResults[j]
				continue
			}
			// The batch failed as a whole: classify its images one by one
			// so the error lands on the image that caused it.
			results[i], errs[i] = c.Classify(imgs[j])
		}
		for i, s := range chunk {
			if errs[i] != nil {
				failed++
				out.failure(s.name, errs[i])
				continue
			}
			saved := ""
			if results[i].Unknown && collector != nil {
				saved = collect(collector, s, stdinCopy.Bytes(), stderr)
			}
			out.result(s.name, results[i], saved)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d images failed", failed, len(sources))
	}
	return nil
}

// collect saves the bytes of an image answered unknown (standard input's
// from stdinCopy) and returns the path, or "" after printing why not; a
// full collection is a warning, not a failure of the image.
func collect(c *infer.Collector, s source, stdinCopy []byte, stderr io.Writer) string {
	raw := stdinCopy
	if s.name != "-" {
		var err error
		if raw, err = os.ReadFile(s.name); err != nil {
			fmt.Fprintf(stderr, "bicyc-infer: %s: not collected: %v\n", s.name, withoutPath(err))
			return ""
		}
	}
	_, format, err := image.DecodeConfig(bytes.NewReader(raw))
	if err == nil {
		var path string
		if path, err = c.Save(raw, format); err == nil {
			return path
		}
	}
	fmt.Fprintf(stderr, "bicyc-infer: %s: not collected: %v\n", s.name, err)
	return ""
}

// expandPaths turns the arguments into image sources: files as given,
// directories walked recursively (in lexical order) for image files, "-"
// as standard input. A path that cannot be listed becomes a source carrying
// its error, so it is reported in order with the rest.
func expandPaths(paths []string) []source {
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
		walkErr := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				out = append(out, source{name: path, err: withoutPath(err)})
			case !d.IsDir() && infer.IsImageFile(path):
				out = append(out, source{name: path})
			}
			return nil
		})
		if walkErr != nil {
			out = append(out, source{name: p, err: walkErr})
		}
	}
	return out
}

// load decodes one source (standard input for "-").
func load(s source, stdin io.Reader, maxPixels int64) (image.Image, error) {
	if s.err != nil {
		return nil, s.err
	}
	r := stdin
	if s.name != "-" {
		f, err := os.Open(s.name)
		if err != nil {
			return nil, withoutPath(err)
		}
		defer f.Close()
		r = f
	}
	img, _, err := infer.DecodeImage(r, maxPixels)
	return img, err
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
// "unknown"; both are "-" when the model cannot say (no calibration, no
// --threshold).
func (p *printer) result(file string, r infer.Result, collected string) {
	if p.json {
		score := r.UnknownScore
		p.enc.Encode(record{File: file, Predictions: r.Predictions, Confidence: r.Confidence, UnknownScore: &score,
			Unknown: r.Unknown, Collected: collected})
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
			answer = "  unknown"
		default:
			answer = "  known"
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
