package docs

import (
	"regexp"
	"strconv"
	"strings"
)

// ShellCommands returns the commands of md's ```sh blocks, in order: a line
// ending in a backslash continues on the next, a comment (from a # that
// starts a word outside quotes) is dropped, and a line is split at &&, ;
// and a trailing & into its commands. Output redirections stay in the
// command; Fields drops them.
func ShellCommands(md string) []string {
	var out []string
	inSh, inOther := false, false
	pending := ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			switch {
			case inSh || inOther:
				inSh, inOther = false, false
			case trimmed == "```sh" || trimmed == "```bash":
				inSh = true
			default:
				inOther = true
			}
			continue
		}
		if !inSh {
			continue
		}
		line = stripComment(line)
		if pending != "" {
			line = pending + strings.TrimLeft(line, " \t")
		}
		if strings.HasSuffix(strings.TrimSpace(line), `\`) {
			pending = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), `\`)) + " "
			continue
		}
		pending = ""
		for _, c := range splitCommands(line) {
			if c = strings.TrimSpace(c); c != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// stripComment drops a # comment that starts a word outside quotes.
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// splitCommands splits a line at &&, ; and & outside quotes.
func splitCommands(line string) []string {
	var out []string
	var quote rune
	start := 0
	for i := 0; i < len(line); i++ {
		r := rune(line[i])
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == ';':
			out, start = append(out, line[start:i]), i+1
		case r == '&':
			out = append(out, line[start:i])
			if i+1 < len(line) && line[i+1] == '&' {
				i++
			}
			start = i + 1
		}
	}
	return append(out, line[start:])
}

// Fields splits a command into its words as a POSIX shell would for the
// simple commands the documentation shows: quotes group and are removed,
// and an output redirection (> file, 2> file, >> file) is dropped.
func Fields(cmd string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range cmd {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	var out []string
	for i := 0; i < len(words); i++ {
		w := strings.TrimLeft(words[i], "012")
		switch {
		case w == ">" || w == ">>":
			i++ // the file
		case strings.HasPrefix(w, ">"):
		default:
			out = append(out, words[i])
		}
	}
	return out
}

var (
	linkRe     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpanRe = regexp.MustCompile("`[^`]*`")
)

// Links returns the targets of md's inline links and images, outside code
// blocks and code spans.
func Links(md string) []string {
	var out []string
	inCode := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		for _, m := range linkRe.FindAllStringSubmatch(codeSpanRe.ReplaceAllString(line, ""), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// Anchors returns the fragment identifiers md's headings get on GitHub:
// lower case, punctuation other than - and _ removed, spaces turned into
// -, repeats numbered -1, -2, ...
func Anchors(md string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	inCode := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f && r != '×' && r != '±':
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := count[slug]; n > 0 {
			count[slug]++
			slug += "-" + strconv.Itoa(n)
		} else {
			count[slug] = 1
		}
		out[slug] = true
	}
	return out
}
