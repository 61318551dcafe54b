package names

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestClassAndRun(t *testing.T) {
	for i, tc := range []struct {
		name       string
		class, run bool // valid as a class name, as a run name
	}{
		{"cat", true, true},
		{"T-shirt/top", true, false}, // Fashion-MNIST's own class name
		{"Blåbær 猫", true, true},
		{"...", true, true},
		{".", true, false},
		{"..", true, false},
		{"../escape", true, false},
		{"a/b", true, false},
		{`a\b`, true, false},
		{"", false, false},
		{" lead", false, false},
		{"trail ", false, false},
		{"new\nline", false, false},
		{"tab\there", false, false},
		{"del\x7f", false, false},
		{"ls\u2028sep", false, false},
		{"Cl\xffass", false, false},
		{strings.Repeat("a", MaxBytes), true, true},
		{strings.Repeat("a", MaxBytes+1), false, false},
	} {
		if err := Class(tc.name); (err == nil) != tc.class || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("case %d: Class(%q) = %v, want valid %v", i, tc.name, err, tc.class)
		}
		if err := Run(tc.name); (err == nil) != tc.run || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("case %d: Run(%q) = %v, want valid %v", i, tc.name, err, tc.run)
		}
	}
}

func ExampleRun() {
	fmt.Println(Run("../escape"))
	// Output:
	// run name "../escape": invalid name: contains a path separator (a run name is one folder name: a class name's rule (valid UTF-8, 1 to 255 bytes, no control or line-break characters, no leading or trailing space), no / or \, and not . or ..)
}
