package safetensors_test

import (
	"bytes"
	"fmt"

	"github.com/bicyc/bicyc/safetensors"
)

func Example() {
	var buf bytes.Buffer
	err := safetensors.Write(&buf, []safetensors.Tensor{
		{Name: "means", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}},
	}, map[string]string{"classes": "2"})
	if err != nil {
		panic(err)
	}
	ts, meta, err := safetensors.Decode(buf.Bytes())
	if err != nil {
		panic(err)
	}
	m, _ := safetensors.Find(ts, "means")
	fmt.Println(m.Shape, m.Data, meta["classes"])
	// Output: [2 3] [1 2 3 4 5 6] 2
}
