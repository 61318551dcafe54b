package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
)

// classifyOptions are the root command's flags and arguments.
type classifyOptions struct {
	model modelOptions
	json  bool
	batch int
	paths []string
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
	Error       string             `json:"error,omitempty"`
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
	sources := expandPaths(o.paths, stderr)
	if len(sources) == 0 {
		return errors.New("no image files found in the given directories")
	}
	c, err := o.model.open(stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	limitMemory(memoryBase + bytesPerPixel*o.model.maxPixels)

	out := newPrinter(o.json, stdout, stderr, sources, c.Classes())
	failed := 0
	for start := 0; start < len(sources); start += o.batch {
		chunk := sources[start:min(start+o.batch, len(sources))]
		errs := make([]error, len(chunk))
		// Each image is reduced to the model's input before the next is
		// decoded: a batch holds at most one decoded image at a time.
		var inputs []infer.Input
		var at []int // chunk index of each prepared image
		for i, s := range chunk {
			var in infer.Input
			if in, errs[i] = load(c, s, stdin, o.model.maxPixels); errs[i] == nil {
				inputs = append(inputs, in)
				at = append(at, i)
			}
		}
		results := make([]infer.Result, len(chunk))
		batchResults, err := c.ClassifyInputs(inputs)
		for j, i := range at {
			if err == nil {
				results[i] = batchResults[j]
				continue
			}
			// The batch failed as a whole: classify its images one by one
			// so the error lands on the image that caused it.
			var one []infer.Result
			if one, errs[i] = c.ClassifyInputs(inputs[j : j+1]); errs[i] == nil {
				results[i] = one[0]
			}
		}
		for i, s := range chunk {
			if errs[i] != nil {
				failed++
				out.failure(s.name, errs[i])
			} else {
				out.result(s.name, results[i])
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d images failed", failed, len(sources))
	}
	return nil
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
// model's input, releasing a large decoded image at once. A named file is
// opened as given, so a pipe named on the command line is read; every
// source is read through data.DecodeImage's byte and pixel limits, so an
// endless one (/dev/zero) fails at once.
func load(c *infer.Classifier, s source, stdin io.Reader, maxPixels int64) (infer.Input, error) {
	if s.err != nil {
		return infer.Input{}, s.err
	}
	r := stdin
	if s.name != "-" {
		f, err := os.Open(s.name)
		if err != nil {
			return infer.Input{}, withoutPath(err)
		}
		defer f.Close()
		r = f
	}
	img, _, err := data.DecodeImage(r, maxPixels)
	if err != nil {
		return infer.Input{}, err
	}
	in, err := c.Prepare(img)
	bounds := img.Bounds()
	img = nil // no longer referenced, whatever follows
	releaseImage(bounds)
	return in, err
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
}

func newPrinter(asJSON bool, stdout, stderr io.Writer, sources []source, classes []bundle.Class) *printer {
	p := &printer{json: asJSON, stdout: stdout, stderr: stderr, enc: json.NewEncoder(stdout), fileWidth: len("FILE"), nameWidth: len("NAME")}
	for _, s := range sources {
		p.fileWidth = max(p.fileWidth, len(s.name))
	}
	for _, c := range classes {
		p.nameWidth = max(p.nameWidth, len(c.Name))
	}
	return p
}

func (p *printer) result(file string, r infer.Result) {
	if p.json {
		p.enc.Encode(record{File: file, Predictions: r.Predictions})
		return
	}
	if !p.header {
		fmt.Fprintf(p.stdout, "%-*s  %4s  %5s  %-*s  %4s  %s\n", p.fileWidth, "FILE", "RANK", "CLASS", p.nameWidth, "NAME", "TASK", "DISTANCE")
		p.header = true
	}
	for rank, pr := range r.Predictions {
		fmt.Fprintf(p.stdout, "%-*s  %4d  %5d  %-*s  %4d  %.5g\n", p.fileWidth, file, rank+1, pr.ClassID, p.nameWidth, pr.Name, pr.Task, pr.Distance)
	}
}

func (p *printer) failure(file string, err error) {
	if p.json {
		p.enc.Encode(record{File: file, Error: err.Error()})
		return
	}
	fmt.Fprintf(p.stderr, "bicyc-infer: %s: %v\n", file, err)
}
