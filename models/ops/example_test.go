package ops_test

import (
	"fmt"
	"log"

	"github.com/bicyc/bicyc/models/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// run executes g once on a tape machine and returns an error if it fails.
func run(g *G.ExprGraph) error {
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	return vm.RunAll()
}

func ExampleConv2d() {
	g := G.NewGraph()
	// One 3x3 image and one 2x2 filter that takes the difference of the two columns of each window.
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 1, 3, 3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(1, 1, 3, 3), tensor.WithBacking([]float32{1, 2, 4, 8, 16, 32, 64, 128, 256}))))
	w := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 1, 2, 2), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(1, 1, 2, 2), tensor.WithBacking([]float32{-1, 1, -1, 1}))))
	y, err := ops.Conv2d(x, w, 1, 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(g); err != nil {
		log.Fatal(err)
	}
	fmt.Println(y.Shape(), y.Value().Data())
	// Output: (1, 1, 2, 2) [9 18 72 144]
}

func ExampleBatchNorm_Apply() {
	g := G.NewGraph()
	// Four samples of two features: training normalises each column with its batch mean and variance.
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(4, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float32{1, 10, 2, 20, 3, 30, 4, 40}))))
	gamma := G.NewVector(g, tensor.Float32, G.WithShape(2), G.WithName("gamma"),
		G.WithValue(tensor.New(tensor.WithBacking([]float32{1, 1}))))
	beta := G.NewVector(g, tensor.Float32, G.WithShape(2), G.WithName("beta"),
		G.WithValue(tensor.New(tensor.WithBacking([]float32{0, 0}))))
	bn := ops.NewBatchNorm(2)
	y, err := bn.Apply(x, gamma, beta, true, true)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(g); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("y: %.3f\n", y.Value().Data())
	// Momentum 0.1: mean 0.1·batch mean, variance 0.9 + 0.1·unbiased batch variance.
	fmt.Printf("running mean %.3f, running var %.3f\n", bn.RunningMean, bn.RunningVar)
	// Output:
	// y: [0.000 0.000 0.000 0.000 0.447 0.447 1.342 1.342]
	// running mean [0.250 2.500], running var [1.067 17.567]
}

func ExampleMaxPool2() {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 1, 2, 4), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(1, 1, 2, 4), tensor.WithBacking([]float32{1, 5, -2, -3, 4, 2, -1, -4}))))
	y, err := ops.MaxPool2(x)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(g); err != nil {
		log.Fatal(err)
	}
	fmt.Println(y.Shape(), y.Value().Data())
	// Output: (1, 1, 1, 2) [5 -1]
}

func ExampleGlobalAvgPool() {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 2, 2, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(1, 2, 2, 2), tensor.WithBacking([]float32{1, 2, 3, 4, 10, 20, 30, 40}))))
	y, err := ops.GlobalAvgPool(x)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(g); err != nil {
		log.Fatal(err)
	}
	fmt.Println(y.Shape(), y.Value().Data())
	// Output: (1, 2) [2.5 25]
}

func ExampleAddChannelBias() {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 2, 1, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(1, 2, 1, 2), tensor.WithBacking([]float32{1, 2, 3, 4}))))
	b := G.NewVector(g, tensor.Float32, G.WithShape(2), G.WithName("b"),
		G.WithValue(tensor.New(tensor.WithBacking([]float32{10, 100}))))
	y, err := ops.AddChannelBias(x, b)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(g); err != nil {
		log.Fatal(err)
	}
	fmt.Println(y.Value().Data())
	// Output: [11 12 103 104]
}

func ExampleReLU() {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float32, G.WithShape(4), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking([]float32{-2, -0.5, 0, 3}))))
	y, err := ops.ReLU(x)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(g); err != nil {
		log.Fatal(err)
	}
	fmt.Println(y.Value().Data())
	// Output: [0 0 0 3]
}
