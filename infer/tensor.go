package infer

import (
	"fmt"
	"math"
)

// InputShape returns the model's input shape for one image, [C, H, W]:
// the manifest's preprocessing. A batch of N images is [N, C, H, W].
func (c *Classifier) InputShape() [3]int {
	return [3]int{c.pre.Channels, c.pre.Height, c.pre.Width}
}

// InputFromTensor makes an Input from values already preprocessed by the
// caller: C*H*W float32 values in CHW order (InputShape), normalised as the
// manifest's preprocessing does. It copies values. A wrong length or a NaN
// or infinite value is an error wrapping ErrInputShape; Prepare is the way
// from an image.
func (c *Classifier) InputFromTensor(values []float32) (Input, error) {
	if size := c.pre.ImageSize(); len(values) != size {
		return Input{}, fmt.Errorf("%w: input tensor has %d values, want %d (%v)", ErrInputShape, len(values), size, c.InputShape())
	}
	for i, v := range values {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return Input{}, fmt.Errorf("%w: input tensor value %d is %v", ErrInputShape, i, v)
		}
	}
	return Input{append([]float32(nil), values...)}, nil
}
