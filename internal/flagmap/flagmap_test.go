package flagmap

import (
	"errors"
	"fmt"
	"testing"
)

func TestError(t *testing.T) {
	m := Map{
		"data.skip_unreadable": "data.skip_unreadable or --skip-unreadable",
		"run_name":             "run_name or --name",
		"train.Resume":         "bicyc train --resume",
	}
	base := errors.New("base")
	for _, tc := range []struct{ in, want string }{
		{"image folder x (data.skip_unreadable trains on the rest)", "image folder x (data.skip_unreadable or --skip-unreadable trains on the rest)"},
		{"bad name; set run_name", "bad name; set run_name or --name"},
		{"run_name: not a folder name", "run_name: not a folder name"},
		{"x already holds a run: resume it (train.Resume), or choose another run name (run_name)",
			"x already holds a run: resume it (bicyc train --resume), or choose another run name (run_name or --name)"},
		{"my_run_name and data.skip_unreadable_x are other words", "my_run_name and data.skip_unreadable_x are other words"},
	} {
		err := m.Error(fmt.Errorf("%s: %w", tc.in, base))
		if got := err.Error(); got != tc.want+": base" {
			t.Errorf("%q -> %q, want %q", tc.in, got, tc.want+": base")
		}
		if !errors.Is(err, base) {
			t.Errorf("%q: the mapped error does not wrap the original", tc.in)
		}
	}
	if m.Error(nil) != nil {
		t.Error("nil error mapped to non-nil")
	}
}
