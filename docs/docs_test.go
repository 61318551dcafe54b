package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pages are the Markdown files a reader follows from the README (Pages).
func pages(t *testing.T) []string {
	t.Helper()
	files, err := Pages("..")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestLinks follows every relative link of the documentation: the file it
// names must exist, and a #fragment into a Markdown file must be one of
// its headings.
func TestLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, page := range pages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, link := range Links(string(raw)) {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(link, "#")
			target := page
			if path != "" {
				target = filepath.Join(filepath.Dir(page), path)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %s: %v", page, link, err)
				continue
			}
			checked++
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if anchors[target] == nil {
				md, err := os.ReadFile(target)
				if err != nil {
					t.Fatal(err)
				}
				anchors[target] = Anchors(string(md))
			}
			if !anchors[target][frag] {
				t.Errorf("%s: link %s: %s has no heading #%s", page, link, target, frag)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d links checked: is the documentation where the test looks?", checked)
	}
}

var spaces = regexp.MustCompile(`\s+`)

// TestCommandsStillDocumented checks that every command README.md showed
// before it became a short page of journeys (testdata/readme-commands.txt)
// is still shown in README.md or a page of docs/, whitespace aside.
func TestCommandsStillDocumented(t *testing.T) {
	var text strings.Builder
	for _, page := range pages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(spaces.ReplaceAllString(string(raw), " "))
	}
	all := text.String()
	f, err := os.Open("testdata/readme-commands.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cmd := strings.TrimSpace(sc.Text())
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		n++
		if !strings.Contains(all, spaces.ReplaceAllString(cmd, " ")) {
			t.Errorf("the README once showed %q; no page shows it now", cmd)
		}
	}
	if n < 40 {
		t.Errorf("only %d commands listed", n)
	}
}

// TestReadmeLength keeps the README a page a newcomer finishes: at most
// 220 lines, the rest in docs/.
func TestReadmeLength(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > 220 {
		t.Errorf("README.md has %d lines, want at most 220: move the details into a page of docs/", n)
	}
}

func TestShellCommands(t *testing.T) {
	md := "text `bicyc x`\n```sh\nmake train   # set-up # more\nbin/bicyc a \\\n  --set k=v &\nln -s a b && mv x y; curl -H 'A: #b' u\n```\n```go\nnot(a command)\n```\n"
	want := []string{"make train", "bin/bicyc a --set k=v", "ln -s a b", "mv x y", "curl -H 'A: #b' u"}
	if got := ShellCommands(md); !slices.Equal(got, want) {
		t.Errorf("ShellCommands = %q, want %q", got, want)
	}
	for i, c := range []struct {
		cmd  string
		want []string
	}{
		{"bicyc-infer -m m --json d/ > p.jsonl", []string{"bicyc-infer", "-m", "m", "--json", "d/"}},
		{`curl -H 'Content-Type: image/jpeg' --data-binary @p.jpg u 2>/dev/null`, []string{"curl", "-H", "Content-Type: image/jpeg", "--data-binary", "@p.jpg", "u"}},
		{`a "b c"d`, []string{"a", "b cd"}},
	} {
		if got := Fields(c.cmd); !slices.Equal(got, c.want) {
			t.Errorf("case %d: Fields(%q) = %q, want %q", i, c.cmd, got, c.want)
		}
	}
}

func TestLinksAndAnchors(t *testing.T) {
	md := "# Set-up (Debian 12)\n## Journey 2: your photo folders, a service\n## Journey 2: your photo folders, a service\nsee [a](b.md#c) and ![i](f.png \"t\") but `[x](y)`\n```\n[no](link)\n```\n"
	if got, want := Links(md), []string{"b.md#c", "f.png"}; !slices.Equal(got, want) {
		t.Errorf("Links = %q, want %q", got, want)
	}
	a := Anchors(md)
	for i, want := range []string{"set-up-debian-12", "journey-2-your-photo-folders-a-service", "journey-2-your-photo-folders-a-service-1"} {
		if !a[want] {
			t.Errorf("case %d: no anchor %q in %v", i, want, a)
		}
	}
}
