package names

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every error of Class and Run.
var ErrInvalid = errors.New("invalid name")

// MaxBytes is the longest name accepted, in bytes: the longest file name
// Linux file systems take (NAME_MAX), since class and run names become
// folder names.
const MaxBytes = 255

// ClassRule and RunRule state the rules in words, for messages and docs.
const (
	ClassRule = "a class name is valid UTF-8, 1 to 255 bytes, without control or line-break characters and without leading or trailing space"
	RunRule   = "a run name is one folder name: a class name's rule (valid UTF-8, 1 to 255 bytes, no control or line-break characters, no leading or trailing space), no / or \\, and not . or .."
)

// Class checks a class name: valid UTF-8 (JSON and the manifest would
// replace invalid bytes, so the name read back would differ), 1 to
// MaxBytes bytes, no control characters (Unicode Cc, which include tab and
// newline) and no line or paragraph separators (Zl, Zp), which would split
// a printed table row, and no leading or trailing white space, which
// looks like another class's name. A slash is allowed: the standard
// Fashion-MNIST class "T-shirt/top" has one, and class folders cannot
// hold one anyway. The error wraps ErrInvalid and quotes the name and the
// rule.
func Class(name string) error {
	if err := check(name); err != nil {
		return fmt.Errorf("class name %q: %w: %s (%s)", name, ErrInvalid, err, ClassRule)
	}
	return nil
}

// Run checks a run name, the one folder a run is written to under the run
// directory: Class's rule, plus no path separator (/ or \) and not "." or
// "..", so a run is always written inside the run directory. The error
// wraps ErrInvalid and quotes the name and the rule.
func Run(name string) error {
	err := check(name)
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

// check applies the rule shared by class and run names.
func check(name string) error {
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
	}
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return errors.New("starts or ends with white space")
	}
	return nil
}
