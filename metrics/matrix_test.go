package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func equalMatrices(a, b *Matrix) bool {
	if !slices.Equal(a.counts, b.counts) || len(a.rows) != len(b.rows) {
		return false
	}
	for t := range a.rows {
		if !slices.Equal(a.rows[t], b.rows[t]) {
			return false
		}
	}
	return true
}

const bigFirstJSON = `{"class_counts":[50,10,10],"acc":[[0.8],[0.7,0.9],[0.6,0.85,0.95]]}`

const bigFirstCSV = `step,task,classes,accuracy
0,0,50,0.8
0,1,10,
0,2,10,
1,0,50,0.7
1,1,10,0.9
1,2,10,
2,0,50,0.6
2,1,10,0.85
2,2,10,0.95
`

func TestMatrixJSON(t *testing.T) {
	bigFirst, _, _ := handMatrices(t)
	got, err := json.Marshal(bigFirst)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != bigFirstJSON {
		t.Errorf("JSON\n%s\nwant\n%s", got, bigFirstJSON)
	}
	var back Matrix
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !equalMatrices(bigFirst, &back) {
		t.Errorf("JSON round trip changed the matrix")
	}
	partial := mustMatrix(t, []int{5, 5})
	if got, _ := json.Marshal(partial); string(got) != `{"class_counts":[5,5],"acc":[]}` {
		t.Errorf("empty JSON %s", got)
	}
}

func TestMatrixCSV(t *testing.T) {
	bigFirst, lateMax, improving := handMatrices(t)
	var buf bytes.Buffer
	if err := bigFirst.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.String() != bigFirstCSV {
		t.Errorf("CSV\n%s\nwant\n%s", buf.String(), bigFirstCSV)
	}
	partial := mustMatrix(t, []int{50, 10, 10, 10}, []float64{1.0 / 3}, []float64{0.7, math.Nextafter(0.9, 0)})
	for i, m := range []*Matrix{bigFirst, lateMax, improving, partial} {
		buf.Reset()
		if err := m.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadCSV(&buf)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !equalMatrices(m, back) {
			t.Errorf("case %d: CSV round trip changed the matrix", i)
		}
	}
}

func TestMatrixDecodeErrors(t *testing.T) {
	jsonCases := []struct {
		in, want string
	}{
		{`{"class_counts":[],"acc":[]}`, "metrics: no tasks: invalid accuracy matrix"},
		{`{"class_counts":[5,0],"acc":[]}`, "metrics: task 1 has 0 classes: invalid accuracy matrix"},
		{`{"class_counts":[5,5],"acc":[[0.5],[0.5]]}`, "metrics: step 1 has 1 accuracies, want 2: invalid accuracy matrix"},
		{`{"class_counts":[5],"acc":[[1.5]]}`, "metrics: step 0, task 0: accuracy 1.5 is not in [0, 1]: invalid accuracy matrix"},
		{`{"class_counts":[5],"acc":[[0.5],[0.5,0.5]]}`, "metrics: 2 rows for 1 tasks: invalid accuracy matrix"},
		{`{"class_counts":[5],"acc":[[null]]}`, "metrics: step 0, task 0: accuracy is null: invalid accuracy matrix"},
		{`[1,2]`, "metrics: decoding accuracy matrix: invalid accuracy matrix: json: cannot unmarshal array"},
	}
	for i, c := range jsonCases {
		var m Matrix
		err := json.Unmarshal([]byte(c.in), &m)
		// Prefix: the json package's own message follows the last colon.
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, ErrInvalidMatrix) {
			t.Errorf("json case %d: err = %v, want %q", i, err, c.want)
		}
	}

	header := "step,task,classes,accuracy\n"
	csvCases := []struct {
		in, want string
	}{
		{"", "metrics: csv header is not step,task,classes,accuracy: invalid accuracy matrix"},
		{header, "metrics: csv has 0 data lines, not a whole number of steps: invalid accuracy matrix"},
		{header + "0,0,5,0.5\n0,1,5,\n1,0,5,0.5\n", "metrics: csv has 3 data lines, not a whole number of steps: invalid accuracy matrix"},
		{header + "0,0,5,0.5\n0,1,5,0.3\n", `metrics: csv line 3: accuracy "0.3" above the diagonal: invalid accuracy matrix`},
		{header + "0,0,5,x\n", `metrics: csv line 2: accuracy "x" is not a number: invalid accuracy matrix`},
		{header + "0,0,five,0.5\n", `metrics: csv line 2: classes "five" is not an integer: invalid accuracy matrix`},
		{header + "0,0,5,0.5\n0,1,5,\n1,1,5,0.5\n1,0,5,0.5\n", "metrics: csv line 4: step 1 task 1, want step 1 task 0: invalid accuracy matrix"},
		{header + "0,0,5,0.5\n0,1,5,\n1,0,6,0.5\n1,1,5,0.5\n", "metrics: csv line 4: task 0 has 6 classes, step 0 said 5: invalid accuracy matrix"},
		{header + "0,0,5,NaN\n", "metrics: step 0, task 0: accuracy NaN is not in [0, 1]: invalid accuracy matrix"},
		{header + "0,0,5\n", "metrics: reading csv: invalid accuracy matrix: record on line 2: wrong number of fields"},
	}
	for i, c := range csvCases {
		_, err := ReadCSV(strings.NewReader(c.in))
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrInvalidMatrix) {
			t.Errorf("csv case %d: err = %v, want %q", i, err, c.want)
		}
	}
}

func TestAddStepErrors(t *testing.T) {
	m := mustMatrix(t, []int{10}, []float64{0.5})
	if err := m.AddStep([]float64{0.5, 0.5}); err == nil || err.Error() != "metrics: all 1 steps already recorded: invalid accuracy matrix" {
		t.Errorf("err = %v", err)
	}
	if _, err := NewMatrix(nil); !errors.Is(err, ErrInvalidMatrix) {
		t.Errorf("NewMatrix(nil): err = %v", err)
	}
	row := []float64{0.25}
	m2 := mustMatrix(t, []int{3, 4}, row)
	row[0] = 0.75
	if m2.At(0, 0) != 0.25 {
		t.Error("AddStep kept the caller's slice")
	}
	if got := m2.ClassCounts(); !slices.Equal(got, []int{3, 4}) || m2.Tasks() != 2 || m2.Steps() != 1 {
		t.Errorf("ClassCounts %v Tasks %d Steps %d", got, m2.Tasks(), m2.Steps())
	}
	if got := m2.Row(0); !slices.Equal(got, []float64{0.25}) {
		t.Errorf("Row(0) = %v", got)
	}
}
