// Package flagmap turns the names that library errors use into what a
// user of a command types. Libraries name what they know: a setting
// (data.skip_unreadable, run_name) or an entry point of their API
// (train.Resume); a command maps each to its flag (--skip-unreadable,
// --name, bicyc train --resume) where it prints the error.
//
// It imports only cobra and the standard library.
package flagmap

import (
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Map says, for each name a library error may use, what a command says
// instead: "data.skip_unreadable" -> "data.skip_unreadable or
// --skip-unreadable". A name that opens a message or a line and is followed
// by a colon is the subject of a problem with its own value ("run_name:
// ...", as config.Validate lists them) and is left alone.
type Map map[string]string

// Error returns err with every name of m in its message replaced; it
// wraps err, so errors.Is and errors.As see through it. nil stays nil, and
// a message that names nothing of m returns err itself.
func (m Map) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := msg
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Longer names first, so that a name inside another is not replaced
	// in it.
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		out = replaceName(out, k, m[k])
	}
	if out == msg {
		return err
	}
	return &mapped{msg: out, err: err}
}

// Commands makes every RunE of cmd and of its sub-commands return its
// error through Error.
func (m Map) Commands(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error { return m.Error(run(c, args)) }
	}
	for _, sub := range cmd.Commands() {
		m.Commands(sub)
	}
}

// replaceName replaces every whole-word use of name in msg with with,
// except where name is the subject of a line (see Map).
func replaceName(msg, name, with string) string {
	re := regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(name) + `([^\w.]|$)`)
	var b strings.Builder
	last := 0
	for _, ix := range re.FindAllStringSubmatchIndex(msg, -1) {
		start, end := ix[3], ix[4] // the name lies between the two groups
		if subject(msg, start, end) {
			continue
		}
		b.WriteString(msg[last:start])
		b.WriteString(with)
		last = end
	}
	b.WriteString(msg[last:])
	return b.String()
}

// subject reports whether the name at msg[start:end] opens a message, a
// line or a wrapped error (after ": ") and is followed by a colon.
func subject(msg string, start, end int) bool {
	if !strings.HasPrefix(msg[end:], ":") {
		return false
	}
	before := strings.TrimRight(msg[:start], " \t")
	return before == "" || strings.HasSuffix(before, "\n") || strings.HasSuffix(before, ":")
}

type mapped struct {
	msg string
	err error
}

func (e *mapped) Error() string { return e.msg }
func (e *mapped) Unwrap() error { return e.err }
