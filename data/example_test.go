package data_test

import (
	"fmt"

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
