package models_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/models"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func ExampleNewBackbone() {
	b, err := models.NewBackbone(arch.ConvNet, 1, 64, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(8, 1, 28, 28), G.WithName("images"))
	built, err := b.Build(g, x, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(b.Arch(), "features", built.Output.Shape(), "parameters", b.NumParams(), "state tensors", len(b.State()))
	// Output: convnet features (8, 64) parameters 101152 state tensors 17
}

// Example_sharedWeights trains a head through one graph and evaluates it through another of a different batch
// size: the solver updates the head's tensors in place, so the evaluation graph sees the step.
func Example_sharedWeights() {
	head := models.NewLinear(2, 1, true, rand.New(rand.NewPCG(3, 4)))

	train := G.NewGraph()
	xTrain := G.NewMatrix(train, tensor.Float32, G.WithShape(4, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float32{1, 0, 0, 1, 1, 1, -1, 1}))))
	fit, err := head.Build(train, xTrain)
	if err != nil {
		fmt.Println(err)
		return
	}
	cost := G.Must(G.Mean(G.Must(G.Square(fit.Output)))) // drive the outputs to 0
	if _, err := G.Grad(cost, fit.Params...); err != nil {
		fmt.Println(err)
		return
	}
	trainVM := G.NewTapeMachine(train, G.BindDualValues(fit.Params...))
	defer trainVM.Close()

	eval := G.NewGraph()
	xEval := G.NewMatrix(eval, tensor.Float32, G.WithShape(1, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float32{1, 1}))))
	pred, err := head.Build(eval, xEval)
	if err != nil {
		fmt.Println(err)
		return
	}
	evalVM := G.NewTapeMachine(eval)
	defer evalVM.Close()

	solver := G.NewVanillaSolver(G.WithLearnRate(0.5))
	for range 50 {
		if err := trainVM.RunAll(); err != nil {
			fmt.Println(err)
			return
		}
		if err := solver.Step(G.NodesToValueGrads(fit.Params)); err != nil {
			fmt.Println(err)
			return
		}
		trainVM.Reset()
	}
	if err := evalVM.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	y := pred.Output.Value().Data().([]float32)[0]
	fmt.Println("evaluation graph sees the trained head:", math.Abs(float64(y)) < 0.01)
	// Output: evaluation graph sees the trained head: true
}

func ExampleNewMapper() {
	d, err := models.NewMapper(arch.MLP, 64, models.DefaultHiddenMult, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range d.State() {
		fmt.Println(t.Name, t.Shape)
	}
	fmt.Println(d.NumParams())
	// Output:
	// fc1.weight [2048 64]
	// fc1.bias [2048]
	// fc2.weight [64 2048]
	// fc2.bias [64]
	// 264256
}
