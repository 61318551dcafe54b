package cudaops_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cudaops"
)

// A convolution layer on the GPU inside an ordinary gorgonia graph: building and differentiating it needs
// no GPU; running it (G.NewTapeMachine(g).RunAll()) loads CUDA, or fails saying what is missing.
func ExampleConv2d() {
	g := G.NewGraph()
	images := G.NewTensor(g, tensor.Float32, 4, G.WithShape(64, 3, 224, 224), G.WithName("images"))
	filters := G.NewTensor(g, tensor.Float32, 4, G.WithShape(64, 3, 7, 7), G.WithName("stem"))
	y, err := cudaops.Conv2d(images, filters, 2, 3)
	if err != nil {
		panic(err)
	}
	act, err := cudaops.ReLU(y)
	if err != nil {
		panic(err)
	}
	loss, err := G.Sum(act)
	if err != nil {
		panic(err)
	}
	grads, err := G.Grad(loss, filters)
	if err != nil {
		panic(err)
	}
	fmt.Println("output", y.Shape(), "filter gradient", grads[0].Shape())
	// Output: output (64, 64, 112, 112) filter gradient (64, 3, 7, 7)
}
