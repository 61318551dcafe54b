package infer

import (
	"context"
	"io"

	"github.com/bicyc/bicyc/imaging"
)

// RunBatch is the most images one model run takes in ClassifyRuns: a
// batch of more is classified in runs of at most this many, so ONNX
// Runtime's memory, which grows with the batch and is kept for later runs,
// stays that of RunBatch images (a run of 20000 28x28 images took 2.8 GB).
const RunBatch = 64

// DecodePrepare is the one path from encoded bytes to a model input, used
// by bicyc-infer's classify and by serve's v1, v2 and gRPC endpoints: it
// decodes one image from r (imaging.DecodeImageContext, with the
// WithMaxPixels limit; ctx stops the decoding), reduces it to the model's
// input (Prepare), lets the decoded image go and hands its memory back at
// once when it was large (ReleaseImage). It returns the input and the
// image's format ("png", "jpeg", ...). It reads r to the end of the image,
// at most imaging.MaxImageBytes bytes. Errors about the image wrap
// imaging.ErrFormat, imaging.ErrUnsupported or imaging.ErrTooLarge; a
// stopped decode wraps ctx.Err().
func (c *Classifier) DecodePrepare(ctx context.Context, r io.Reader) (Input, string, error) {
	img, format, err := imaging.DecodeImageContext(ctx, r, c.maxPixels)
	if err != nil {
		return Input{}, "", err
	}
	in, err := c.Prepare(img)
	bounds := img.Bounds()
	img = nil // no longer referenced, whatever follows
	ReleaseImage(bounds)
	if err != nil {
		return Input{}, "", err
	}
	return in, format, nil
}

// ClassifyRuns classifies n images in runs of at most RunBatch images,
// preparing each run's inputs (prepare returns those of images lo to hi)
// just before it, so a batch's prepared inputs and ONNX Runtime's memory
// are those of one run whatever n. The runs of a batch of more than
// RunBatch images are of even sizes, at least RunBatch/2, so a batch of at
// least ShortlistMaxBatch images never runs a smaller one (its scores
// would come from the shortlist instead). classify is the Classifier's
// ClassifyInputs, or a caller's wrapper of it.
func ClassifyRuns(ctx context.Context, n int, prepare func(lo, hi int) ([]Input, error),
	classify func(context.Context, []Input) ([]Result, error)) ([]Result, error) {
	runs := (n + RunBatch - 1) / RunBatch
	results := make([]Result, 0, n)
	for r := range runs {
		lo, hi := r*n/runs, (r+1)*n/runs
		inputs, err := prepare(lo, hi)
		if err != nil {
			return nil, err
		}
		out, err := classify(ctx, inputs)
		if err != nil {
			return nil, err
		}
		results = append(results, out...)
	}
	return results, nil
}
