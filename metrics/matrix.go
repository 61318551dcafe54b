package metrics

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Sentinel errors, wrapped by the errors about bad input.
var (
	// ErrInvalidMatrix: a malformed accuracy matrix, whether built in memory
	// or read from JSON or CSV.
	ErrInvalidMatrix = errors.New("invalid accuracy matrix")
	// ErrInvalidAD: features or maps that AD-% cannot use (mismatched
	// lengths or shapes, NaN or infinite values).
	ErrInvalidAD = errors.New("invalid AD-% input")
)

// Matrix is the lower-triangular accuracy matrix of a class-incremental run:
// row t, recorded after training task t, holds acc[t][0..t], the accuracy on
// the test set of each task seen so far. Entries above the diagonal do not
// exist (At returns NaN). A run of T tasks fills T rows one AddStep at a
// time; a stopped run keeps fewer. ClassCounts gives |C_u| for every task,
// the weights of the class-count-weighted means.
//
// The zero Matrix is not usable; build one with NewMatrix or decode one from
// JSON (UnmarshalJSON) or CSV (ReadCSV).
type Matrix struct {
	counts []int
	rows   [][]float64
}

// NewMatrix returns an empty matrix for tasks with the given numbers of
// classes (all positive), e.g. [50, 10, 10, 10, 10, 10] for a run whose first
// task is larger. The slice is copied.
func NewMatrix(classCounts []int) (*Matrix, error) {
	if len(classCounts) == 0 {
		return nil, fmt.Errorf("metrics: no tasks: %w", ErrInvalidMatrix)
	}
	for u, c := range classCounts {
		if c <= 0 {
			return nil, fmt.Errorf("metrics: task %d has %d classes: %w", u, c, ErrInvalidMatrix)
		}
	}
	return &Matrix{counts: append([]int(nil), classCounts...)}, nil
}

// Tasks returns T, the number of tasks of the run.
func (m *Matrix) Tasks() int { return len(m.counts) }

// Steps returns the number of rows recorded so far (0..T).
func (m *Matrix) Steps() int { return len(m.rows) }

// ClassCounts returns a copy of |C_u| for every task u.
func (m *Matrix) ClassCounts() []int { return append([]int(nil), m.counts...) }

// AddStep records row t = Steps(): acc[u] is the accuracy on task u's test
// set after training task t, for u = 0..t, so len(acc) must be t+1. Every
// value must be a fraction in [0, 1]. The slice is copied.
func (m *Matrix) AddStep(acc []float64) error {
	t := len(m.rows)
	if t == len(m.counts) {
		return fmt.Errorf("metrics: all %d steps already recorded: %w", t, ErrInvalidMatrix)
	}
	if len(acc) != t+1 {
		return fmt.Errorf("metrics: step %d has %d accuracies, want %d: %w", t, len(acc), t+1, ErrInvalidMatrix)
	}
	for u, a := range acc {
		if !(a >= 0 && a <= 1) {
			return fmt.Errorf("metrics: step %d, task %d: accuracy %v is not in [0, 1]: %w", t, u, a, ErrInvalidMatrix)
		}
	}
	m.rows = append(m.rows, append([]float64(nil), acc...))
	return nil
}

// At returns acc[t][u], or NaN when u > t or step t is not recorded yet. It
// panics if t or u is outside [0, Tasks()).
func (m *Matrix) At(t, u int) float64 {
	if t < 0 || t >= len(m.counts) || u < 0 || u >= len(m.counts) {
		panic(fmt.Sprintf("metrics: index [%d][%d] outside a %d-task matrix", t, u, len(m.counts)))
	}
	if t >= len(m.rows) || u > t {
		return math.NaN()
	}
	return m.rows[t][u]
}

// Row returns a copy of row t, the t+1 accuracies after step t. It panics if
// step t is not recorded.
func (m *Matrix) Row(t int) []float64 {
	if t < 0 || t >= len(m.rows) {
		panic(fmt.Sprintf("metrics: row %d outside the %d recorded steps", t, len(m.rows)))
	}
	return append([]float64(nil), m.rows[t]...)
}

// matrixJSON is the JSON layout of a Matrix as MarshalJSON writes it.
type matrixJSON struct {
	ClassCounts []int       `json:"class_counts"`
	Acc         [][]float64 `json:"acc"`
}

// MarshalJSON encodes m as
//
//	{"class_counts": [|C_0|, ..., |C_T-1|], "acc": [[a00], [a10, a11], ...]}
//
// with one ragged row per recorded step (row t has t+1 entries).
func (m *Matrix) MarshalJSON() ([]byte, error) {
	acc := m.rows
	if acc == nil {
		acc = [][]float64{}
	}
	return json.Marshal(matrixJSON{ClassCounts: m.counts, Acc: acc})
}

// UnmarshalJSON decodes the layout of MarshalJSON and validates it as
// NewMatrix and AddStep do; errors wrap ErrInvalidMatrix.
func (m *Matrix) UnmarshalJSON(data []byte) error {
	// Pointers tell a JSON null, which would otherwise decode as 0, from 0.
	var raw struct {
		ClassCounts []int        `json:"class_counts"`
		Acc         [][]*float64 `json:"acc"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("metrics: decoding accuracy matrix: %w: %w", ErrInvalidMatrix, err)
	}
	built, err := NewMatrix(raw.ClassCounts)
	if err != nil {
		return err
	}
	if len(raw.Acc) > built.Tasks() {
		return fmt.Errorf("metrics: %d rows for %d tasks: %w", len(raw.Acc), built.Tasks(), ErrInvalidMatrix)
	}
	for t, row := range raw.Acc {
		acc := make([]float64, len(row))
		for u, a := range row {
			if a == nil {
				return fmt.Errorf("metrics: step %d, task %d: accuracy is null: %w", t, u, ErrInvalidMatrix)
			}
			acc[u] = *a
		}
		if err := built.AddStep(acc); err != nil {
			return err
		}
	}
	*m = *built
	return nil
}

// csvHeader is the first line of the CSV layout.
var csvHeader = []string{"step", "task", "classes", "accuracy"}

// WriteCSV writes m in long format, one line per (step, task) pair of every
// recorded step, steps then tasks in increasing order:
//
//	step,task,classes,accuracy
//	0,0,50,0.91
//	0,1,10,
//	...
//
// step and task count from 0, classes is |C_task|, and accuracy is empty
// above the diagonal (task > step); values use Go's shortest round-trip
// formatting. Every task appears in every step, so the class counts survive
// as long as one step is recorded.
func (m *Matrix) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("metrics: writing csv: %w", err)
	}
	for t := range m.rows {
		for u, c := range m.counts {
			acc := ""
			if u <= t {
				acc = strconv.FormatFloat(m.rows[t][u], 'g', -1, 64)
			}
			if err := cw.Write([]string{strconv.Itoa(t), strconv.Itoa(u), strconv.Itoa(c), acc}); err != nil {
				return fmt.Errorf("metrics: writing csv: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("metrics: writing csv: %w", err)
	}
	return nil
}

// ReadCSV reads the layout of WriteCSV. Lines must come in the order
// WriteCSV writes them, with the same class counts in every step; errors
// name the line (or the step) and wrap ErrInvalidMatrix. A CSV with only the
// header has no class counts and is an error.
func ReadCSV(r io.Reader) (*Matrix, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(csvHeader)
	records, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("metrics: reading csv: %w: %w", ErrInvalidMatrix, err)
	}
	if len(records) == 0 || !slices.Equal(records[0], csvHeader) {
		return nil, fmt.Errorf("metrics: csv header is not %s: %w", strings.Join(csvHeader, ","), ErrInvalidMatrix)
	}
	records = records[1:]
	// Step 0 lists every task, which gives T.
	tasks := 0
	for tasks < len(records) && records[tasks][0] == "0" {
		tasks++
	}
	if tasks == 0 || len(records)%tasks != 0 {
		return nil, fmt.Errorf("metrics: csv has %d data lines, not a whole number of steps: %w", len(records), ErrInvalidMatrix)
	}
	counts := make([]int, tasks)
	rows := make([][]float64, len(records)/tasks)
	for i, rec := range records {
		line := i + 2
		t, u := i/tasks, i%tasks
		var nums [3]int
		for k := range nums {
			if nums[k], err = strconv.Atoi(rec[k]); err != nil {
				return nil, fmt.Errorf("metrics: csv line %d: %s %q is not an integer: %w", line, csvHeader[k], rec[k], ErrInvalidMatrix)
			}
		}
		if nums[0] != t || nums[1] != u {
			return nil, fmt.Errorf("metrics: csv line %d: step %d task %d, want step %d task %d: %w", line, nums[0], nums[1], t, u, ErrInvalidMatrix)
		}
		if t == 0 {
			counts[u] = nums[2]
		} else if nums[2] != counts[u] {
			return nil, fmt.Errorf("metrics: csv line %d: task %d has %d classes, step 0 said %d: %w", line, u, nums[2], counts[u], ErrInvalidMatrix)
		}
		if u > t {
			if rec[3] != "" {
				return nil, fmt.Errorf("metrics: csv line %d: accuracy %q above the diagonal: %w", line, rec[3], ErrInvalidMatrix)
			}
			continue
		}
		a, err := strconv.ParseFloat(rec[3], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: csv line %d: accuracy %q is not a number: %w", line, rec[3], ErrInvalidMatrix)
		}
		rows[t] = append(rows[t], a)
	}
	m, err := NewMatrix(counts)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		if err := m.AddStep(row); err != nil {
			return nil, err
		}
	}
	return m, nil
}
