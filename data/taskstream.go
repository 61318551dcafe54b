package data

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// ErrTaskStream marks task-stream parameters or a decoded TaskStream that
// do not describe a partition of the classes into tasks.
var ErrTaskStream = errors.New("invalid task stream")

// TaskStream is the order in which a class-incremental run meets the
// classes (docs/method.md, "Setting": tasks bring disjoint class sets). Order is a
// permutation of the class ids 0..K-1; Tasks[t] lists the class ids of task
// t (0-based), consecutive runs of Order. Every class is in exactly one task.
// It marshals to JSON as {"order": [...], "tasks": [[...], ...]}; call
// Validate on one decoded from outside.
type TaskStream struct {
	Order []int   `json:"order"`
	Tasks [][]int `json:"tasks"`
}

// NewTaskStream splits numClasses classes into numTasks tasks.
//
// The class order is order when it is not nil (it must be a permutation of
// 0..numClasses-1); when order is nil, the identity 0..numClasses-1 if seed
// < 0, otherwise a uniform random permutation drawn from seed (PCG seeded
// with (seed, 0); the same seed always gives the same order).
//
// firstTaskSize classes go to task 0 and the rest are split equally among
// the other tasks; firstTaskSize 0 means all tasks have equal size. A split
// that does not divide evenly is an error that gives the numbers; errors wrap
// ErrTaskStream.
func NewTaskStream(numClasses, numTasks, firstTaskSize int, order []int, seed int64) (TaskStream, error) {
	if numClasses < 1 || numTasks < 1 || numTasks > numClasses {
		return TaskStream{}, fmt.Errorf("%w: %d classes into %d tasks, want 1 <= tasks <= classes", ErrTaskStream, numClasses, numTasks)
	}
	sizes, err := taskSizes(numClasses, numTasks, firstTaskSize)
	if err != nil {
		return TaskStream{}, err
	}
	switch {
	case order != nil:
		if err := checkPermutation(order, numClasses); err != nil {
			return TaskStream{}, err
		}
		order = append([]int(nil), order...)
	case seed < 0:
		order = make([]int, numClasses)
		for i := range order {
			order[i] = i
		}
	default:
		order = rand.New(rand.NewPCG(uint64(seed), 0)).Perm(numClasses)
	}
	s := TaskStream{Order: order, Tasks: make([][]int, numTasks)}
	next := 0
	for t, n := range sizes {
		s.Tasks[t] = append([]int(nil), order[next:next+n]...)
		next += n
	}
	return s, nil
}

// taskSizes returns the number of classes of each task.
func taskSizes(numClasses, numTasks, firstTaskSize int) ([]int, error) {
	sizes := make([]int, numTasks)
	if firstTaskSize == 0 {
		if numClasses%numTasks != 0 {
			return nil, fmt.Errorf("%w: %d classes do not split equally into %d tasks", ErrTaskStream, numClasses, numTasks)
		}
		for t := range sizes {
			sizes[t] = numClasses / numTasks
		}
		return sizes, nil
	}
	if firstTaskSize < 0 || firstTaskSize > numClasses-(numTasks-1) {
		return nil, fmt.Errorf("%w: first task of %d classes leaves %d of %d classes for the other %d tasks, want at least 1 each", ErrTaskStream, firstTaskSize, numClasses-firstTaskSize, numClasses, numTasks-1)
	}
	rest := numClasses - firstTaskSize
	if numTasks == 1 {
		if rest != 0 {
			return nil, fmt.Errorf("%w: a single task must hold all %d classes, first task size is %d", ErrTaskStream, numClasses, firstTaskSize)
		}
		return []int{numClasses}, nil
	}
	if rest%(numTasks-1) != 0 {
		return nil, fmt.Errorf("%w: after a first task of %d classes, the remaining %d classes do not split equally into %d tasks", ErrTaskStream, firstTaskSize, rest, numTasks-1)
	}
	sizes[0] = firstTaskSize
	for t := 1; t < numTasks; t++ {
		sizes[t] = rest / (numTasks - 1)
	}
	return sizes, nil
}

// checkPermutation reports whether order is a permutation of 0..n-1.
func checkPermutation(order []int, n int) error {
	if len(order) != n {
		return fmt.Errorf("%w: class order has %d entries, want %d", ErrTaskStream, len(order), n)
	}
	seen := make([]bool, n)
	for i, c := range order {
		if c < 0 || c >= n {
			return fmt.Errorf("%w: class order entry %d is %d, want a class id in [0, %d)", ErrTaskStream, i, c, n)
		}
		if seen[c] {
			return fmt.Errorf("%w: class %d appears twice in the class order", ErrTaskStream, c)
		}
		seen[c] = true
	}
	return nil
}

// Validate checks that s describes numClasses classes: Order is a
// permutation of 0..numClasses-1 and Tasks, non-empty each, are its
// consecutive runs. Errors wrap ErrTaskStream.
func (s TaskStream) Validate(numClasses int) error {
	if err := checkPermutation(s.Order, numClasses); err != nil {
		return err
	}
	if len(s.Tasks) == 0 {
		return fmt.Errorf("%w: no tasks", ErrTaskStream)
	}
	next := 0
	for t, task := range s.Tasks {
		if len(task) == 0 {
			return fmt.Errorf("%w: task %d is empty", ErrTaskStream, t)
		}
		for _, c := range task {
			if next >= len(s.Order) || s.Order[next] != c {
				return fmt.Errorf("%w: task %d lists class %d out of the class order", ErrTaskStream, t, c)
			}
			next++
		}
	}
	if next != len(s.Order) {
		return fmt.Errorf("%w: tasks cover %d of %d classes", ErrTaskStream, next, len(s.Order))
	}
	return nil
}

// TaskOf returns the task (0-based) that holds class, or -1 if none does.
func (s TaskStream) TaskOf(class int) int {
	for t, task := range s.Tasks {
		for _, c := range task {
			if c == class {
				return t
			}
		}
	}
	return -1
}

// SeenClasses returns the classes of tasks 0..t in stream order: the label
// space after training task t. It panics if t is not in [0, len(Tasks)).
func (s TaskStream) SeenClasses(t int) []int {
	var classes []int
	for _, task := range s.Tasks[:t+1] {
		classes = append(classes, task...)
	}
	return classes
}

// String prints one line per task, "task 1: 3 7 1", without names.
func (s TaskStream) String() string { return s.Format(nil) }

// Format prints one line per task, numbered from 1, with each class id followed by its name
// in parentheses, "task 1: 3 (Dress), 7 (Sneaker)"; ids without a name in
// names are printed alone, so Format(nil) gives String's form.
func (s TaskStream) Format(names []string) string {
	var b strings.Builder
	for t, task := range s.Tasks {
		fmt.Fprintf(&b, "task %d:", t+1)
		for i, c := range task {
			sep := " "
			if i > 0 && names != nil {
				sep = ", "
			}
			b.WriteString(sep)
			b.WriteString(strconv.Itoa(c))
			if c >= 0 && c < len(names) {
				b.WriteString(" (" + names[c] + ")")
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
