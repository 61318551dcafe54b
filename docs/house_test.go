package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The house rules the compiler does not check, checked on the code itself
// (development.md, "The map"): which packages a package may link, how long
// a function may be, and go.mod's direct and indirect marks. TestHouseMap
// measures the layout (go test -v -run TestHouseMap ./docs/).

const module = "github.com/bicyc/bicyc"

// maxFuncLines is the longest a function (tests included) may be, from its
// func line to its closing brace; generated files are exempt.
const maxFuncLines = 80

// readingSide may not link: the trainer's numerics and its datasets stay
// out of the packages that read models, images and run records, so that
// inference and reports never link gorgonia.
var readingSide = []string{
	"gorgonia.org/...",
	module + "/export/...",
	module + "/data/...",
	module + "/models/...",
	module + "/train/...",
	module + "/gpu/...",
}

// forbiddenDeps lists, per package of this module, the packages its build
// (go list -deps) must not contain. A pattern ending in /... also covers the
// packages below it.
var forbiddenDeps = map[string][]string{
	"infer":      readingSide,
	"serve":      readingSide,
	"report":     readingSide,
	"imaging":    readingSide,
	"repository": readingSide,
	"rundir":     readingSide,
	"sweep":      readingSide,
	"config":     readingSide,
	// The inference CLI also adds classes (author), which reads class
	// folders through data and builds the classifier graph of
	// export/classgraph, but never links the trainer or the exporter.
	"cmd/bicyc-infer": {"gorgonia.org/...", module + "/export", module + "/models/...", module + "/train", module + "/gpu/..."},
}

// goCmd runs the go command in the repository root and returns its output.
func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := tryGo(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryGo runs the go command in the repository root; its error holds the
// command's standard error.
func tryGo(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// matches reports whether the import path p is pattern or, for a pattern
// ending in /..., the package before it or one below it.
func matches(pattern, p string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// TestForbiddenImports: no package links what forbiddenDeps forbids it,
// through any chain of imports.
func TestForbiddenImports(t *testing.T) {
	pkgs := slices.Sorted(func(yield func(string) bool) {
		for p := range forbiddenDeps {
			if !yield(p) {
				return
			}
		}
	})
	for _, pkg := range pkgs {
		out, err := tryGo("list", "-deps", "-f", "{{.ImportPath}}", "./"+pkg)
		if err != nil {
			t.Errorf("%s: %v", pkg, err)
			continue
		}
		deps := strings.Fields(out)
		for _, pattern := range forbiddenDeps[pkg] {
			var found []string
			for _, d := range deps {
				if matches(pattern, d) {
					found = append(found, strings.TrimPrefix(d, module+"/"))
				}
			}
			if len(found) > 0 {
				t.Errorf("%s links %s, which it may not (%d packages: %s)", pkg, pattern, len(found), strings.Join(found, ", "))
			}
		}
	}
}

// goFiles returns the .go files of the repository that the go command
// builds or tests: none under testdata or a directory whose name starts
// with . or _.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != ".." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// funcName is a function's name as its file writes it: Recv.Name for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	recv := fd.Recv.List[0].Type
	if star, ok := recv.(*ast.StarExpr); ok {
		recv = star.X
	}
	if idx, ok := recv.(*ast.IndexExpr); ok { // a generic receiver
		recv = idx.X
	}
	if id, ok := recv.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestFunctionLength: no function of the repository outside generated
// files is longer than maxFuncLines lines. Split a long one into named
// steps, not at the line where it crosses the limit.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, path := range goFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if ast.IsGenerated(f) {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			checked++
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				rel, _ := filepath.Rel("..", path)
				t.Errorf("%s:%d: %s is %d lines, more than %d", rel, start.Line, funcName(fd), n, maxFuncLines)
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d functions found: is the walk in the repository root?", checked)
	}
}

// requires returns go.mod's required modules, each with whether it is
// marked // indirect.
func requires(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	inBlock := false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 {
			out[f[0]] = strings.HasSuffix(line, "// indirect")
		}
	}
	return out
}

// TestGoModMarks: a module that some package or test of this repository
// imports is marked direct in go.mod, and every other one indirect, as
// `go mod tidy` leaves them (make vet runs go mod tidy -diff, which also
// needs the module cache or the proxy; this check needs neither).
func TestGoModMarks(t *testing.T) {
	imports := map[string]bool{}
	for _, p := range strings.Split(goCmd(t, "list", "-test", "-f", `{{range .Imports}}{{.}}{{"\n"}}{{end}}`, "./..."), "\n") {
		p, _, _ = strings.Cut(p, " ") // a test's variant of a package: "path [pkg.test]"
		if !strings.HasPrefix(p, module+"/") && strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			imports[p] = true
		}
	}
	args := append([]string{"list", "-f", "{{with .Module}}{{.Path}}{{end}}"}, slices.Sorted(func(yield func(string) bool) {
		for p := range imports {
			if !yield(p) {
				return
			}
		}
	})...)
	direct := map[string]bool{}
	for _, m := range strings.Fields(goCmd(t, args...)) {
		direct[m] = true
	}
	reqs := requires(t)
	for m := range direct {
		if indirect, ok := reqs[m]; !ok || indirect {
			t.Errorf("go.mod: %s is imported by this module but not required as a direct dependency", m)
		}
	}
	for m, indirect := range reqs {
		if !indirect && !direct[m] {
			t.Errorf("go.mod: %s is marked direct but nothing here imports it (mark it // indirect)", m)
		}
	}
}

// room is the part of the house a package belongs to: its top directory, or
// cmd/NAME and internal/NAME (each command and each internal helper is a
// room of its own).
func room(importPath string) string {
	parts := strings.Split(strings.TrimPrefix(importPath, module+"/"), "/")
	if len(parts) > 1 && (parts[0] == "cmd" || parts[0] == "internal") {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// houseMap is the layout measured from the code: the rooms, the rooms each
// imports (tests left out), and each room's floor.
type houseMap struct {
	rooms   []string
	imports map[string][]string
	floor   map[string]int // 0: imports no other room; else 1 + the highest floor it imports
	scc     map[string]int // rooms that import each other, directly or around a circle, share an index
	// importers counts, per package of this module, the packages of this module that import it.
	importers map[string]int
}

func measureHouse(t *testing.T) houseMap {
	t.Helper()
	h := houseMap{imports: map[string][]string{}, floor: map[string]int{}, scc: map[string]int{}, importers: map[string]int{}}
	seen := map[[2]string]bool{}
	out := strings.TrimSpace(goCmd(t, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./..."))
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		from := room(f[0])
		if _, ok := h.imports[from]; !ok {
			h.imports[from] = nil
			h.rooms = append(h.rooms, from)
		}
		for _, p := range f[1:] {
			if strings.HasPrefix(p, module+"/") {
				h.importers[strings.TrimPrefix(p, module+"/")]++
			}
			if to := room(p); strings.HasPrefix(p, module+"/") && to != from && !seen[[2]string{from, to}] {
				seen[[2]string{from, to}] = true
				h.imports[from] = append(h.imports[from], to)
			}
		}
	}
	slices.Sort(h.rooms)
	h.components()
	for _, r := range h.rooms {
		h.floorOf(r, map[int]bool{})
	}
	return h
}

// components finds the circles (Tarjan's strongly connected components).
func (h *houseMap) components() {
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	next, comp := 0, 0
	var visit func(string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range h.imports[v] {
			if _, ok := index[w]; !ok {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				h.scc[w] = comp
				if w == v {
					break
				}
			}
			comp++
		}
	}
	for _, r := range h.rooms {
		if _, ok := index[r]; !ok {
			visit(r)
		}
	}
}

// floorOf computes a room's floor, a circle of rooms counting as one room.
func (h *houseMap) floorOf(r string, visiting map[int]bool) int {
	if f, ok := h.floor[r]; ok {
		return f
	}
	visiting[h.scc[r]] = true
	f := 0
	for _, other := range h.rooms {
		if h.scc[other] != h.scc[r] {
			continue
		}
		for _, to := range h.imports[other] {
			if !visiting[h.scc[to]] {
				f = max(f, h.floorOf(to, visiting)+1)
			}
		}
	}
	delete(visiting, h.scc[r])
	h.floor[r] = f
	return f
}

// packageLines counts the lines of each package's Go files, tests and
// generated files left out.
func packageLines(t *testing.T) (lines map[string]int, total int) {
	t.Helper()
	lines = map[string]int{}
	fset := token.NewFileSet()
	for _, path := range goFiles(t) {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := parser.ParseFile(fset, path, src, parser.PackageClauseOnly|parser.ParseComments); err == nil && ast.IsGenerated(f) {
			continue
		}
		dir, _ := filepath.Rel("..", filepath.Dir(path))
		n := bytes.Count(src, []byte("\n"))
		lines[filepath.ToSlash(dir)] += n
		total += n
	}
	return lines, total
}

// TestHouseMap measures the layout and prints it with -v: rooms (cmd/NAME
// and internal/NAME count one each, any other top directory one), floors
// (the longest chain of imports between rooms), arrows back up (imports from
// a room to one on its own floor or above, which only a circle of rooms
// makes), and the largest package's share of the lines (tests and generated
// code left out). It fails on a circle of rooms.
func TestHouseMap(t *testing.T) {
	h := measureHouse(t)
	floors, arrowsBack := 0, 0
	byFloor := map[int][]string{}
	for _, r := range h.rooms {
		floors = max(floors, h.floor[r]+1)
		byFloor[h.floor[r]] = append(byFloor[h.floor[r]], r)
		for _, to := range h.imports[r] {
			if h.floor[to] >= h.floor[r] {
				arrowsBack++
				t.Errorf("%s imports %s, on floor %d against its own %d: a circle of rooms", r, to, h.floor[to], h.floor[r])
			}
		}
	}
	lines, total := packageLines(t)
	largest := ""
	for p, n := range lines {
		if n > lines[largest] || (n == lines[largest] && p < largest) {
			largest = p
		}
	}
	roomLines := map[string]int{}
	for p, n := range lines {
		roomLines[room(module+"/"+p)] += n
	}
	largestRoom, mostImported := "", ""
	for r, n := range roomLines {
		if n > roomLines[largestRoom] || (n == roomLines[largestRoom] && r < largestRoom) {
			largestRoom = r
		}
	}
	for p, n := range h.importers {
		if n > h.importers[mostImported] || (n == h.importers[mostImported] && p < mostImported) {
			mostImported = p
		}
	}
	share := func(n int) float64 { return 100 * float64(n) / float64(total) }
	t.Logf("rooms %d, floors %d, arrows back up %d; largest package %s: %d of %d lines (%.1f%%); largest room %s: %d lines (%.1f%%); most imported package %s (%d importers)",
		len(h.rooms), floors, arrowsBack, largest, lines[largest], total, share(lines[largest]),
		largestRoom, roomLines[largestRoom], share(roomLines[largestRoom]), mostImported, h.importers[mostImported])
	for f := range floors {
		t.Logf("floor %d: %s", f, strings.Join(byFloor[f], " "))
	}
}
