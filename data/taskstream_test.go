package data

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestTaskStreamFiveTasks splits Fashion-MNIST's 10 classes into 5 tasks:
// the tasks are disjoint, cover all classes, and partition the real data.
func TestTaskStreamFiveTasks(t *testing.T) {
	train, _ := loadFashionMNIST(t)
	s, err := NewTaskStream(train.NumClasses(), 5, 0, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(10); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for task, classes := range s.Tasks {
		if len(classes) != 2 {
			t.Errorf("task %d has %d classes", task, len(classes))
		}
		for _, c := range classes {
			seen[c]++
			if s.TaskOf(c) != task {
				t.Errorf("TaskOf(%d) = %d, want %d", c, s.TaskOf(c), task)
			}
		}
	}
	for c := range 10 {
		if seen[c] != 1 {
			t.Errorf("class %d is in %d tasks", c, seen[c])
		}
	}
	total := 0
	inTask := make([]int, train.Len())
	for task, classes := range s.Tasks {
		idx := train.Subset(classes)
		total += len(idx)
		for _, i := range idx {
			inTask[i]++
		}
		if len(idx) != 12000 {
			t.Errorf("task %d has %d training images, want 12000", task, len(idx))
		}
	}
	if total != 60000 || slices.Min(inTask) != 1 || slices.Max(inTask) != 1 {
		t.Errorf("tasks hold %d images; each image in %d..%d tasks", total, slices.Min(inTask), slices.Max(inTask))
	}
	if s.TaskOf(10) != -1 || !slices.Equal(s.SeenClasses(1), append(slices.Clone(s.Tasks[0]), s.Tasks[1]...)) {
		t.Errorf("TaskOf(10) = %d, SeenClasses(1) = %v", s.TaskOf(10), s.SeenClasses(1))
	}
	if identity, _ := NewTaskStream(10, 5, 0, nil, 7); !slices.Equal(identity.Order, s.Order) {
		t.Error("same seed gave another order")
	}
	if other, _ := NewTaskStream(10, 5, 0, nil, 8); slices.Equal(other.Order, s.Order) {
		t.Error("seeds 7 and 8 gave the same order")
	}
}

func TestNewTaskStream(t *testing.T) {
	cases := []struct {
		classes, tasks, first int
		order                 []int
		seed                  int64
		want                  [][]int // nil: an error mentioning msg
		msg                   string
	}{
		{10, 5, 0, nil, -1, [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}}, ""},
		{10, 3, 4, nil, -1, [][]int{{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, ""},
		{6, 2, 0, []int{5, 3, 1, 0, 2, 4}, 99, [][]int{{5, 3, 1}, {0, 2, 4}}, ""},
		{4, 1, 0, nil, -1, [][]int{{0, 1, 2, 3}}, ""},
		{4, 1, 4, nil, -1, [][]int{{0, 1, 2, 3}}, ""},
		{100, 11, 50, nil, -1, nil, ""}, // checked below by sizes
		{10, 3, 0, nil, -1, nil, "10 classes do not split equally into 3 tasks"},
		{10, 4, 5, nil, -1, nil, "remaining 5 classes do not split equally into 3 tasks"},
		{10, 3, 9, nil, -1, nil, "first task of 9 classes"},
		{10, 11, 0, nil, -1, nil, "10 classes into 11 tasks"},
		{0, 1, 0, nil, -1, nil, "0 classes"},
		{4, 2, 0, []int{0, 1, 2}, -1, nil, "class order has 3 entries, want 4"},
		{4, 2, 0, []int{0, 1, 1, 3}, -1, nil, "class 1 appears twice"},
		{4, 2, 0, []int{0, 1, 2, 4}, -1, nil, "entry 3 is 4"},
		{4, 1, 3, nil, -1, nil, "single task"},
		{4, 2, -1, nil, -1, nil, "first task of -1"},
	}
	for i, c := range cases {
		s, err := NewTaskStream(c.classes, c.tasks, c.first, c.order, c.seed)
		if c.want == nil && c.msg != "" {
			if !errors.Is(err, ErrTaskStream) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("case %d: got %v, want ErrTaskStream mentioning %q", i, err, c.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if c.want != nil && !slices.EqualFunc(s.Tasks, c.want, slices.Equal[[]int]) {
			t.Errorf("case %d: tasks %v, want %v", i, s.Tasks, c.want)
		}
		if c.want == nil && (len(s.Tasks[0]) != 50 || len(s.Tasks[10]) != 5) {
			t.Errorf("case %d: task sizes %d, %d", i, len(s.Tasks[0]), len(s.Tasks[10]))
		}
		if err := s.Validate(c.classes); err != nil {
			t.Errorf("case %d: Validate: %v", i, err)
		}
	}
}

func TestTaskStreamJSONAndValidate(t *testing.T) {
	s, err := NewTaskStream(6, 3, 0, []int{4, 2, 0, 1, 3, 5}, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"order":[4,2,0,1,3,5],"tasks":[[4,2],[0,1],[3,5]]}`; string(raw) != want {
		t.Fatalf("json %s, want %s", raw, want)
	}
	var back TaskStream
	if err := json.Unmarshal(raw, &back); err != nil || back.Validate(6) != nil || back.String() != s.String() {
		t.Fatalf("round trip %v %v", back, err)
	}
	for i, bad := range []string{
		`{"order":[4,2,0,1,3,5],"tasks":[[4,2],[0,1],[5,3]]}`,
		`{"order":[4,2,0,1,3,5],"tasks":[[4,2],[0,1]]}`,
		`{"order":[4,2,0,1,3,5],"tasks":[[4,2,0,1,3,5],[]]}`,
		`{"order":[4,2,0,1,3],"tasks":[[4,2],[0,1],[3]]}`,
		`{"order":[4,2,0,1,3,5]}`,
	} {
		var ts TaskStream
		if err := json.Unmarshal([]byte(bad), &ts); err != nil {
			t.Fatal(err)
		}
		if err := ts.Validate(6); !errors.Is(err, ErrTaskStream) {
			t.Errorf("case %d: Validate gave %v", i, err)
		}
	}
}

func TestTaskStreamFormat(t *testing.T) {
	s, _ := NewTaskStream(4, 2, 0, []int{3, 0, 1, 2}, 0)
	if got, want := s.String(), "task 1: 3 0\ntask 2: 1 2\n"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
	if got, want := s.Format([]string{"a", "b", "c"}), "task 1: 3, 0 (a)\ntask 2: 1 (b), 2 (c)\n"; got != want {
		t.Errorf("Format: %q, want %q", got, want)
	}
}
