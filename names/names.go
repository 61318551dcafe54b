package names

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// ErrInvalid is wrapped by every error of Class, Run and Stored.
var ErrInvalid = errors.New("invalid name")

// ErrLookalike is wrapped when a new class name is another class's name
// under Unicode normalisation and case folding (CheckNew).
var ErrLookalike = errors.New("class names that look alike")

// MaxBytes is the longest name accepted, in bytes: the longest file name
// Linux file systems take (NAME_MAX), since class and run names become
// folder names.
const MaxBytes = 255

// ClassRule and RunRule state the rules in words, for messages and docs.
const (
	ClassRule = "a class name is valid UTF-8 in Unicode NFC form, 1 to 255 bytes, without control, line-break or invisible formatting characters (bidirectional controls, zero-width spaces and joiners) and without leading or trailing space"
	RunRule   = "a run name is one folder name: a class name's rule (valid UTF-8 in NFC form, 1 to 255 bytes, no control, line-break or invisible formatting characters, no leading or trailing space), no / or \\, and not . or .."
)

// NFC returns name in Unicode normalisation form C, the form every class
// name is kept in: a folder named "café" with a combining accent (NFD, as
// macOS writes it) and one with the precomposed é are the same class.
func NFC(name string) string { return norm.NFC.String(name) }

// Key is what two class names must differ in to be told apart: the NFC
// form, case-folded (Unicode full case folding, so "Shirt", "shirt" and
// "SHIRT" share one key, as do "Straße" and "STRASSE"). A model's classes
// have distinct keys (CheckNew).
func Key(name string) string {
	return norm.NFC.String(cases.Fold().String(norm.NFC.String(name)))
}

// Class checks a new class name: valid UTF-8 (JSON and the manifest would
// replace invalid bytes, so the name read back would differ) in NFC form
// (NFC; two byte sequences of one name would be two classes), 1 to
// MaxBytes bytes, no control characters (Unicode Cc, which include tab and
// newline), no line or paragraph separators (Zl, Zp), which would split a
// printed table row, no formatting characters (Cf: the bidirectional
// controls such as U+202E, which display a name reversed, and the
// zero-width spaces and joiners such as U+200B, which make a name look
// like another), and no leading or trailing white space, which looks like
// another class's name. A slash is allowed: the standard Fashion-MNIST
// class "T-shirt/top" has one, and class folders cannot hold one anyway.
// The error wraps ErrInvalid and quotes the name and the rule.
func Class(name string) error {
	if err := check(name, true); err != nil {
		return fmt.Errorf("class name %q: %w: %s (%s)", name, ErrInvalid, err, ClassRule)
	}
	return nil
}

// Stored checks a class name that is already part of a model or a run,
// by the rule of bicyc versions before Class refused formatting
// characters and non-NFC forms: such models and runs keep working
// (Warnings says what Class would refuse in them). The error wraps
// ErrInvalid.
func Stored(name string) error {
	if err := check(name, false); err != nil {
		return fmt.Errorf("class name %q: %w: %s (%s)", name, ErrInvalid, err, ClassRule)
	}
	return nil
}

// Run checks a run name, the one folder a run is written to under the run
// directory: Class's rule, plus no path separator (/ or \) and not "." or
// "..", so a run is always written inside the run directory. The error
// wraps ErrInvalid and quotes the name and the rule.
func Run(name string) error {
	err := check(name, true)
	switch {
	case err != nil:
	case strings.ContainsAny(name, `/\`):
		err = errors.New("contains a path separator")
	case name == "." || name == "..":
		err = errors.New("names a folder that is not a new one")
	}
	if err != nil {
		return fmt.Errorf("run name %q: %w: %s (%s)", name, ErrInvalid, err, RunRule)
	}
	return nil
}

// CheckNew checks the names of classes added to a model or a run whose
// classes are named existing (nil for a new one): each by Class, and each
// against every other new one and every existing one by Key, so
// "Shirt/" and "shirt/", or two forms of "café", never become two classes.
// Every problem is reported, in one error wrapping ErrInvalid or
// ErrLookalike.
func CheckNew(existing, added []string) error {
	type owner struct{ name, what string }
	taken := make(map[string]owner, len(existing)+len(added))
	for _, name := range existing {
		taken[Key(name)] = owner{name, "an existing class"}
	}
	var errs []error
	for _, name := range added {
		if err := Class(name); err != nil {
			errs = append(errs, err)
			continue
		}
		k := Key(name)
		if other, ok := taken[k]; ok {
			alike := " up to letter case or Unicode form"
			if other.name == name {
				alike = ""
			}
			errs = append(errs, fmt.Errorf("class name %q: %w: it is %q, %s%s", name, ErrLookalike, other.name, other.what, alike))
			continue
		}
		taken[k] = owner{name, "another new class"}
	}
	return errors.Join(errs...)
}

// Warnings returns, one line each, what Class and CheckNew would refuse
// in the class names of a model or run made before them: such names keep
// working, and commands print these lines as warnings.
func Warnings(classes []string) []string {
	var out []string
	first := map[string]string{}
	for _, name := range classes {
		if err := Class(name); err != nil {
			out = append(out, err.Error())
		}
		k := Key(name)
		if other, ok := first[k]; ok {
			out = append(out, fmt.Sprintf("class names %q and %q look alike (they differ only in letter case or Unicode form); rename one in a new version", other, name))
			continue
		}
		first[k] = name
	}
	return slices.Clip(out)
}

// check applies the rule shared by class and run names; strict adds the
// refusals of formatting characters and non-NFC forms.
func check(name string, strict bool) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > MaxBytes:
		return fmt.Errorf("%d bytes long", len(name))
	case !utf8.ValidString(name):
		return errors.New("not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp) {
			return fmt.Errorf("contains the control character %U", r)
		}
		if strict && unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("contains the invisible formatting character %U", r)
		}
	}
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return errors.New("starts or ends with white space")
	}
	if strict && !norm.NFC.IsNormalString(name) {
		return errors.New("not in Unicode NFC form (bicyc's tools normalise folder names to it)")
	}
	return nil
}

// Model checks the name of a model in a model repository (package
// repository), one path element: letters, digits, '-', '_' and '.', not
// starting with '.' (a hidden entry, such as a writer's lock or a
// half-written version, is never a model).
func Model(name string) error {
	if name == "" || name[0] == '.' || strings.IndexFunc(name, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return fmt.Errorf("%q: want letters, digits, '-', '_' or '.', not starting with '.'", name)
	}
	return nil
}
