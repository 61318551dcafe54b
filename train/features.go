package train

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/models"
)

// extractor computes backbone features in evaluation mode (BatchNorm with
// running statistics) on a fixed-size graph; a final partial batch is padded
// with zeros, which cannot affect the other rows in evaluation mode.
type extractor struct {
	batch  int
	input  *tensor.Dense
	output *G.Node
	vm     G.VM
}

func newExtractor(b *models.Backbone, batch, c, h, w int) (*extractor, error) {
	g := G.NewGraph()
	in := tensor.New(tensor.WithShape(batch, c, h, w), tensor.Of(tensor.Float32))
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(batch, c, h, w), G.WithName("image"), G.WithValue(in))
	feat, _, err := buildBackbone(b, g, x, false)
	if err != nil {
		return nil, err
	}
	return &extractor{batch: batch, input: in, output: feat, vm: G.NewTapeMachine(g)}, nil
}

// run computes the features of the n images in x (NCHW, n <= batch) into dst [n,S].
func (e *extractor) run(x []float32, n int, dst []float32) error {
	in := e.input.Data().([]float32)
	copy(in, x[:len(in)/e.batch*n])
	clear(in[len(in)/e.batch*n:])
	if err := e.vm.RunAll(); err != nil {
		return err
	}
	defer e.vm.Reset()
	out := e.output.Value().Data().([]float32)
	s := len(out) / e.batch
	copy(dst[:n*s], out[:n*s])
	return nil
}

func (e *extractor) close() { e.vm.Close() }

// features returns the [len(indices), S] features of the given images of ds
// under backbone b, with the test-time preprocessing p; flipped adds the
// horizontally flipped copy of every image after the originals (docs/method.md,
// "Stage II" step 3), doubling the rows.
func features(b *models.Backbone, ds *data.Dataset, indices []int, p imaging.Preprocess, batch int, flipped bool) ([]float32, error) {
	if len(indices) == 0 {
		return nil, nil
	}
	c, h, w := ds.Channels, ds.Height, ds.Width
	batch = min(batch, len(indices))
	ex, err := newExtractor(b, batch, c, h, w)
	if err != nil {
		return nil, err
	}
	defer ex.close()
	size := c * h * w
	s := b.FeatureDim()
	rows := len(indices)
	if flipped {
		rows *= 2
	}
	out := make([]float32, rows*s)
	x := make([]float32, batch*size)
	flip := make([]uint8, size)
	for pass := 0; pass < 1+btoi(flipped); pass++ {
		for start := 0; start < len(indices); start += batch {
			n := min(batch, len(indices)-start)
			for i := 0; i < n; i++ {
				img := ds.Image(indices[start+i])
				if pass == 1 {
					imaging.FlipHorizontal(img, flip, c, h, w)
					img = flip
				}
				p.Normalize(img, x[i*size:(i+1)*size])
			}
			row := pass*len(indices) + start
			if err := ex.run(x, n, out[row*s:(row+n)*s]); err != nil {
				return nil, fmt.Errorf("features: %w", err)
			}
		}
	}
	return out, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
