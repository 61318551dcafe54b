package docs

import (
	"os"
	"path/filepath"
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

// quoting follows single and double quotes through a line: 0 outside
// quotes, else the open quote.
type quoting rune

// outside reports whether r stands outside quotes (a quote character
// itself does not), and moves past it.
func (q *quoting) outside(r rune) bool {
	switch {
	case *q != 0:
		if r == rune(*q) {
			*q = 0
		}
		return false
	case r == '\'' || r == '"':
		*q = quoting(r)
		return false
	}
	return true
}

// stripComment drops a # comment that starts a word outside quotes.
func stripComment(line string) string {
	var q quoting
	for i, r := range line {
		if q.outside(r) && r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return line[:i]
		}
	}
	return line
}

// splitCommands splits a line at &&, ; and & outside quotes.
func splitCommands(line string) []string {
	var out []string
	var q quoting
	start := 0
	for i := 0; i < len(line); i++ {
		if !q.outside(rune(line[i])) {
			continue
		}
		switch line[i] {
		case ';':
			out, start = append(out, line[start:i]), i+1
		case '&':
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

// Invocations returns the argument lists of the commands that run program
// (named bare or as bin/<program>), program itself left out.
func Invocations(program string, cmds []string) [][]string {
	var out [][]string
	for _, c := range cmds {
		f := Fields(c)
		if len(f) > 0 && (f[0] == program || f[0] == "bin/"+program) {
			out = append(out, f[1:])
		}
	}
	return out
}

// Pages lists the Markdown files a reader follows from the README, as
// paths under root (the repository): README.md, the READMEs of configs/,
// bench/ and docs/results/, and every page of docs/.
func Pages(root string) ([]string, error) {
	files := []string{"README.md", "configs/README.md", "bench/README.md", "docs/results/README.md"}
	for i, f := range files {
		files[i] = filepath.Join(root, f)
	}
	for _, pattern := range []string{"docs/*.md", "docs/results/*/README.md", "docs/results/*/report.md"} {
		more, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return nil, err
		}
		files = append(files, more...)
	}
	return files, nil
}

// Documented returns the argument lists of every documented command that
// runs program: the ```sh lines of the pages under root (Pages) and of
// examples, a command's --help examples as cobra prints them.
func Documented(root, program, examples string) ([][]string, error) {
	pages, err := Pages(root)
	if err != nil {
		return nil, err
	}
	var cmds []string
	for _, p := range pages {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, ShellCommands(string(raw))...)
	}
	cmds = append(cmds, ShellCommands("```sh\n"+examples+"\n```")...)
	return Invocations(program, cmds), nil
}
