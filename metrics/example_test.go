package metrics_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/bicyc/bicyc/metrics"
	"gonum.org/v1/gonum/mat"
)

func Example() {
	// A 3-task run whose first task has 50 classes and the others 10.
	m, err := metrics.NewMatrix([]int{50, 10, 10})
	if err != nil {
		panic(err)
	}
	for _, row := range [][]float64{{0.80}, {0.70, 0.90}, {0.60, 0.85, 0.95}} {
		if err := m.AddStep(row); err != nil {
			panic(err)
		}
	}
	fmt.Printf("A_last %.4f  A_inc %.4f  F_last %.4f (paper weighting %.4f)\n",
		metrics.ALast(m), metrics.AInc(m), metrics.FLast(m, metrics.OldTasks), metrics.FLast(m, metrics.AllTasks))
	for _, p := range metrics.Curve(m, metrics.OldTasks) {
		fmt.Printf("step %d: A_last %.4f F %.4f\n", p.Step, p.ALast, p.FLast)
	}
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
	// Output:
	// A_last 0.6857  A_inc 0.7397  F_last 0.1750 (paper weighting 0.1500)
	// step 0: A_last 0.8000 F 0.0000
	// step 1: A_last 0.7333 F 0.1000
	// step 2: A_last 0.6857 F 0.1750
	// {"class_counts":[50,10,10],"acc":[[0.8],[0.7,0.9],[0.6,0.85,0.95]]}
}

func ExampleMatrix_WriteCSV() {
	m, _ := metrics.NewMatrix([]int{20, 10})
	_ = m.AddStep([]float64{0.5})
	_ = m.AddStep([]float64{0.6, 0.7})
	if err := m.WriteCSV(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// step,task,classes,accuracy
	// 0,0,20,0.5
	// 0,1,10,
	// 1,0,20,0.6
	// 1,1,10,0.7
}

func ExampleADOfMaps() {
	// A linear adapter that scales by 1.05 and 0.5, and a distiller that
	// inverts only the first axis.
	a := mat.NewDiagDense(2, []float64{1.05, 0.5})
	d := mat.NewDiagDense(2, []float64{1 / 1.05, 1})
	r, err := metrics.ADOfMaps(a, d)
	if err != nil {
		panic(err)
	}
	fmt.Printf("singular values %.2f, AD-%% in [0.9, 1.1]: %.0f\n", r.SingularValues, r.Percent)
	// Output: singular values [1.00 0.50], AD-% in [0.9, 1.1]: 50
}
