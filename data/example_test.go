package data_test

import (
	"fmt"
	"image"
	"image/color"

	"github.com/bicyc/bicyc/data"
)

func ExampleNewTaskStream() {
	// Ten classes in five tasks of two, in a class order drawn from seed 1.
	s, err := data.NewTaskStream(10, 5, 0, nil, 1)
	if err != nil {
		panic(err)
	}
	fmt.Print(s)
	fmt.Println("class 3 is in task", s.TaskOf(3)+1) // TaskOf counts from 0

	// A fixed order with a larger first task: 4 classes, then two tasks of 3.
	s, err = data.NewTaskStream(10, 3, 4, []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 0)
	if err != nil {
		panic(err)
	}
	fmt.Print(s.Format(data.FashionMNISTClasses))

	// 10 classes cannot be split into 3 equal tasks.
	_, err = data.NewTaskStream(10, 3, 0, nil, -1)
	fmt.Println(err)
	// Output:
	// task 1: 6 3
	// task 2: 1 9
	// task 3: 7 4
	// task 4: 8 2
	// task 5: 0 5
	// class 3 is in task 1
	// task 1: 9 (Ankle boot), 8 (Bag), 7 (Sneaker), 6 (Shirt)
	// task 2: 5 (Sandal), 4 (Coat), 3 (Dress)
	// task 3: 2 (Pullover), 1 (Trouser), 0 (T-shirt/top)
	// invalid task stream: 10 classes do not split equally into 3 tasks
}

func ExamplePreprocess_Image() {
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	p := data.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: mean, Std: std, Resize: data.ResizeCatmullRom}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	// A 56x56 half-transparent white square: composited onto the black
	// background, resized to 28x28 with Catmull-Rom, converted to luma,
	// normalised with Fashion-MNIST's mean and std.
	img := image.NewNRGBA(image.Rect(0, 0, 56, 56))
	for y := range 56 {
		for x := range 56 {
			img.SetNRGBA(x, y, color.NRGBA{255, 255, 255, 128})
		}
	}
	x := p.Image(img)
	fmt.Printf("%d values (NCHW 1x1x28x28), pixel %d of 255 -> %.4f\n", len(x), p.Pixels(img)[0], x[0])
	// Output:
	// 784 values (NCHW 1x1x28x28), pixel 128 of 255 -> 0.6118
}
