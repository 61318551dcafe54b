package compare

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Table is a result table printed as an aligned Markdown pipe table, so
// the output can be pasted into an issue as is.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row. Cells beyond the header's count are kept and printed.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table to w: the header, a separator line, then the rows,
// every column padded to its widest cell.
func (t *Table) Write(w io.Writer) error {
	rows := append([][]string{t.Header}, t.Rows...)
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c), 3)
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		b.WriteString("|")
		for i, wd := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", wd-utf8.RuneCountInString(c)))
		}
		return b.String() + "\n"
	}
	var b strings.Builder
	b.WriteString(line(t.Header))
	sep := make([]string, len(width))
	for i, wd := range width {
		sep[i] = strings.Repeat("-", wd)
	}
	b.WriteString(line(sep))
	for _, r := range t.Rows {
		b.WriteString(line(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
