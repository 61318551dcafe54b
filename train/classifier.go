package train

import (
	"github.com/bicyc/bicyc/bundle"
)

// classEntries returns, for classes in score order, the manifest entries
// the classifier reads: each class's task (from 1) in the stream and its
// age, the tasks up to last (numbered from 0) trained after its own.
func classEntries(tasks [][]int, classes []int, last int) []bundle.Class {
	taskOf := map[int]int{}
	for u, cs := range tasks {
		for _, c := range cs {
			taskOf[c] = u
		}
	}
	out := make([]bundle.Class, len(classes))
	for i, c := range classes {
		out[i] = bundle.Class{ID: c, Task: taskOf[c] + 1, Age: last - taskOf[c]}
	}
	return out
}
