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
		{"evil\u202egnp", false, false}, // right-to-left override
		{"sh\u200birt", false, false},   // zero-width space
		{"\ufeffbom", false, false},
		{"cafe\u0301", false, false}, // NFD: NFC first
		{"café", true, true},
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
	// run name "../escape": invalid name: contains a path separator (a run name is one folder name: a class name's rule (valid UTF-8 in NFC form, 1 to 255 bytes, no control, line-break or invisible formatting characters, no leading or trailing space), no / or \, and not . or ..)
}

// TestCheckNew: issue 42, row 5. Names equal up to letter case or
// Unicode form are one class: refused against the model's classes and
// against each other, every problem at once; old lists are reported.
func TestCheckNew(t *testing.T) {
	nfd, nfc := "cafe\u0301", "caf\u00e9"
	if NFC(nfd) != nfc || Key("Shirt") != Key("shirt") || Key("STRASSE") != Key("straße") || Key(nfd) != Key("CAFÉ") {
		t.Fatal("NFC or Key")
	}
	if Key("Shirt") == Key("Skirt") {
		t.Fatal("distinct names share a key")
	}
	err := CheckNew([]string{"Shirt", nfc}, []string{"shirt", NFC(nfd), "Bag", "BAG", "sh\u200birt"})
	for _, want := range []string{`"shirt": class names that look alike: it is "Shirt", an existing class`, `"café": class names that look alike: it is "café", an existing class`, `"BAG": class names that look alike: it is "Bag", another new class`, "U+200B"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckNew: %v; want %q", err, want)
		}
	}
	if !errors.Is(err, ErrLookalike) || !errors.Is(err, ErrInvalid) {
		t.Errorf("CheckNew wraps neither sentinel: %v", err)
	}
	if err := CheckNew([]string{"Shirt"}, []string{"Skirt", "T-shirt/top"}); err != nil {
		t.Errorf("distinct names: %v", err)
	}
	w := Warnings([]string{"Shirt", "shirt", "evil\u202egnp", nfd})
	if len(w) != 3 || !strings.Contains(w[0], `"Shirt" and "shirt" look alike`) || !strings.Contains(w[1], "U+202E") || !strings.Contains(w[2], "NFC") {
		t.Errorf("Warnings: %q", w)
	}
	if err := Stored("evil\u202egnp"); err != nil {
		t.Errorf("Stored refuses an old name: %v", err)
	}
}
