package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"

	"github.com/bicyc/bicyc/repository"
)

// errNotFound: the request names a model or version the server does not
// serve; it answers 404.
var errNotFound = repository.ErrNotFound

// version is one opened, verified model version.
type version struct {
	number   int64
	dir      string
	model    model
	classes  []bundle.Class
	column   map[int]int // class ID -> score column
	topK     int         // classes /v1/classify answers
	loadedAt time.Time
}

// servedModel is one model name and the versions served under it,
// ascending. It is never modified once published in a catalog.
type servedModel struct {
	name     string
	policy   VersionPolicy
	versions []*version
}

// latest returns the newest version.
func (m *servedModel) latest() *version { return m.versions[len(m.versions)-1] }

// numbers returns the version numbers, ascending.
func (m *servedModel) numbers() []int64 {
	out := make([]int64, len(m.versions))
	for i, v := range m.versions {
		out[i] = v.number
	}
	return out
}

// catalog is what the server serves: model name -> versions. A catalog is
// replaced whole, never modified, so a request reads one consistent
// snapshot without locks.
type catalog map[string]*servedModel

// names returns the model names, sorted.
func (c *catalog) names() []string {
	out := make([]string, 0, len(*c))
	for name := range *c {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// find returns the version of model name numbered number, or its latest
// for number 0.
func (c *catalog) find(name string, number int64) (*version, error) {
	m := (*c)[name]
	if m == nil {
		return nil, fmt.Errorf("model %q is not served: %w", name, errNotFound)
	}
	if number == 0 {
		return m.latest(), nil
	}
	for _, v := range m.versions {
		if v.number == number {
			return v, nil
		}
	}
	return nil, fmt.Errorf("model %q version %d is not served (versions served: %v): %w", name, number, m.numbers(), errNotFound)
}

// indexEntry is one model version in the repository index (Triton's
// repository extension).
type indexEntry struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// index lists the versions served.
func (c *catalog) index() []indexEntry {
	var out []indexEntry
	for _, name := range c.names() {
		for _, n := range (*c)[name].numbers() {
			out = append(out, indexEntry{Name: name, Version: strconv.FormatInt(n, 10), State: "READY"})
		}
	}
	return out
}

// with returns a copy of c in which name serves m (nil: nothing).
func (c *catalog) with(name string, m *servedModel) *catalog {
	next := make(catalog, len(*c)+1)
	for k, v := range *c {
		next[k] = v
	}
	if m == nil {
		delete(next, name)
	} else {
		next[name] = m
	}
	return &next
}

// use runs f on version number of model name (its latest for 0) and
// returns the version it ran on. A load or unload may close the version a
// request picked just before the swap: f then runs again on what the new
// catalog serves, so no request fails for a swap.
func (s *Server) use(name string, number int64, f func(model) error) (*version, error) {
	for {
		cat := s.models.Load()
		v, err := cat.find(name, number)
		if err != nil {
			return nil, err
		}
		err = f(v.model)
		if isClosed(err) && s.models.Load() != cat {
			continue
		}
		return v, err
	}
}

// load opens and verifies the versions of model name that policy (nil: the
// model's current policy, or the configured one) selects now and, only if
// every one verifies, serves them from the next request on, closing the
// versions they replace once their calls in flight have finished. On
// failure the versions served before keep serving.
func (s *Server) load(ctx context.Context, name string, policy *VersionPolicy) (*servedModel, error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	old := (*s.models.Load())[name]
	p := s.cfg.Policy
	if old != nil {
		p = old.policy
	}
	if policy != nil {
		p = *policy
	}
	versions, err := s.openVersions(ctx, name, p)
	if err != nil {
		if s.ready.Load() {
			s.reloads.WithLabelValues("failed").Inc()
		}
		err = s.loadFailure(name, old, err)
		s.failures[name] = err.Error()
		fmt.Fprintf(s.log, "bicyc-infer: %v\n", err)
		return nil, err
	}
	next := &servedModel{name: name, policy: p, versions: versions}
	s.models.Store(s.models.Load().with(name, next))
	delete(s.failures, name)
	if s.ready.Load() {
		s.reloads.WithLabelValues("ok").Inc()
	}
	var errs []error
	if old != nil {
		for _, v := range old.versions {
			errs = append(errs, v.model.Close())
		}
	}
	switch {
	case s.name == "" && old == nil:
		fmt.Fprintf(s.log, "bicyc-infer: loaded model %s versions %v (%s)\n", name, next.numbers(), p)
	case s.name == "":
		fmt.Fprintf(s.log, "bicyc-infer: reloaded model %s versions %v (%s), was %v\n", name, next.numbers(), p, old.numbers())
	case old != nil:
		fmt.Fprintf(s.log, "bicyc-infer: reloaded %s (%d classes)\n", s.cfg.Model, len(next.latest().classes))
	}
	return next, errors.Join(errs...)
}

// loadFailure words a failed load of model name: for a single model
// directory as its reload always was, for a repository naming the model
// and the versions still served.
func (s *Server) loadFailure(name string, old *servedModel, err error) error {
	switch {
	case s.name != "" && old != nil:
		return fmt.Errorf("reload of %s failed, still serving the model verified at %s: %w",
			s.cfg.Model, old.latest().loadedAt.Format(time.RFC3339), err)
	case s.name != "":
		return err
	case old != nil:
		return fmt.Errorf("model %s: load failed, still serving versions %v: %w", name, old.numbers(), err)
	}
	return fmt.Errorf("model %s: load failed: %w", name, err)
}

// unload stops serving model name and closes its versions once their
// calls in flight have finished.
func (s *Server) unload(name string) error {
	if s.name != "" {
		return badRequestf("serving one model directory: nothing to unload (serve a --model-repository to unload models)")
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	old := (*s.models.Load())[name]
	if old == nil {
		return fmt.Errorf("model %q is not loaded: %w", name, errNotFound)
	}
	s.models.Store(s.models.Load().with(name, nil))
	var errs []error
	for _, v := range old.versions {
		errs = append(errs, v.model.Close())
	}
	fmt.Fprintf(s.log, "bicyc-infer: unloaded model %s versions %v\n", name, old.numbers())
	return errors.Join(errs...)
}

// openVersions opens the versions of model name that p selects; on an
// error it closes those it opened.
func (s *Server) openVersions(ctx context.Context, name string, p VersionPolicy) ([]*version, error) {
	dirs := map[int64]string{1: s.cfg.Model}
	if s.name == "" {
		found, err := repository.Versions(filepath.Join(s.cfg.Repository, name))
		if err != nil {
			return nil, err
		}
		if dirs, err = p.pick(found); err != nil {
			return nil, err
		}
	}
	var out []*version
	for _, n := range slices.Sorted(mapKeys(dirs)) {
		m, err := s.cfg.open(ctx, dirs[n])
		if err != nil {
			for _, v := range out {
				v.model.Close()
			}
			if s.name == "" {
				err = fmt.Errorf("version %d: %w", n, err)
			}
			return nil, err
		}
		out = append(out, s.newVersion(n, dirs[n], m))
	}
	return out, nil
}

func (s *Server) newVersion(n int64, dir string, m model) *version {
	v := &version{number: n, dir: dir, model: m, classes: m.Classes(), column: map[int]int{}, loadedAt: time.Now()}
	for i, c := range v.classes {
		v.column[c.ID] = i
	}
	v.topK = gauss.ResolveTopK(len(v.classes), s.cfg.TopK, m.Manifest().Classifier.TopK)
	return v
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// VersionPolicy selects the versions of a repository model to serve, as
// Triton's version_policy does: the newest Latest versions, or exactly the
// pinned Versions. The zero value serves the latest version.
type VersionPolicy struct {
	// Latest serves the newest Latest versions (0 means 1).
	Latest int
	// Versions, if not empty, serves exactly these versions: a pin, or a
	// rollback to an older version. Every one must exist.
	Versions []int64
}

// ParseVersionPolicy parses "latest", "latest:N" or "specific:V1,V2,...";
// "" is the zero policy, the latest version.
func ParseVersionPolicy(s string) (VersionPolicy, error) {
	kind, arg, _ := strings.Cut(s, ":")
	var p VersionPolicy
	switch {
	case s == "":
	case kind == "latest" && arg == "":
		p.Latest = 1
	case kind == "latest":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return p, fmt.Errorf("version policy %q: %q is not a number", s, arg)
		}
		if n < 1 {
			return p, fmt.Errorf("version policy %q: want latest versions >= 1", s)
		}
		p.Latest = n
	case kind == "specific" && arg != "":
		for _, f := range strings.Split(arg, ",") {
			n, err := repository.ParseVersion(strings.TrimSpace(f))
			if err != nil {
				return p, fmt.Errorf("version policy %q: %w", s, err)
			}
			p.Versions = append(p.Versions, n)
		}
	default:
		return p, fmt.Errorf("version policy %q: want latest, latest:N or specific:V1,V2,...", s)
	}
	return p, p.validate()
}

func (p VersionPolicy) validate() error {
	if p.Latest < 0 || p.Latest > 0 && len(p.Versions) > 0 {
		return fmt.Errorf("version policy %s: want latest versions >= 1, or pinned versions, not both", p)
	}
	return nil
}

// String returns the policy in ParseVersionPolicy's syntax.
func (p VersionPolicy) String() string {
	if len(p.Versions) > 0 {
		parts := make([]string, len(p.Versions))
		for i, v := range p.Versions {
			parts[i] = strconv.FormatInt(v, 10)
		}
		return "specific:" + strings.Join(parts, ",")
	}
	return fmt.Sprintf("latest:%d", max(p.Latest, 1))
}

// pick returns the versions of found the policy selects; none is an error.
func (p VersionPolicy) pick(found map[int64]string) (map[int64]string, error) {
	out := map[int64]string{}
	if len(p.Versions) > 0 {
		for _, n := range p.Versions {
			dir, ok := found[n]
			if !ok {
				return nil, fmt.Errorf("version policy %s: no version %d: %w", p, n, errNotFound)
			}
			out[n] = dir
		}
		return out, nil
	}
	numbers := slices.Sorted(mapKeys(found))
	if len(numbers) == 0 {
		return nil, fmt.Errorf("no version directories (1/, 2/, ...): %w", errNotFound)
	}
	for _, n := range numbers[max(0, len(numbers)-max(p.Latest, 1)):] {
		out[n] = found[n]
	}
	return out, nil
}

// repositoryRoutes adds the repository API (Triton's model repository
// extension) to the admin mux.
func (s *Server) repositoryRoutes(mux *http.ServeMux, route func(*http.ServeMux, string, string, http.HandlerFunc)) {
	route(mux, "POST /v2/repository/index", "repository_index", s.repositoryIndex)
	route(mux, "POST /v2/repository/models/{name}/load", "repository_load", s.repositoryLoad)
	route(mux, "POST /v2/repository/models/{name}/unload", "repository_unload", s.repositoryUnload)
}

// repositoryIndex answers POST /v2/repository/index: every version of
// every model in the repository, READY when served, UNAVAILABLE with the
// reason otherwise. A body {"ready": true} lists only those served.
func (s *Server) repositoryIndex(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Ready bool `json:"ready"`
	}
	if err := decodeJSON(w, r, 1<<16, &req); err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	index, err := s.oipRepositoryIndex(req.Ready)
	if err != nil {
		writeError(w, oipStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, index)
}

func nonNil(e []indexEntry) []indexEntry {
	if e == nil {
		return []indexEntry{}
	}
	return e
}

// repositoryLoad answers POST /v2/repository/models/{name}/load: it
// (re)loads the model, with the versions its policy selects, or the policy
// in the body's parameters, {"parameters": {"version_policy":
// "specific:2"}}, kept for later reloads. 200 {"name", "versions"} once
// they serve; on failure the versions served before keep serving.
func (s *Server) repositoryLoad(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Parameters struct {
			VersionPolicy string `json:"version_policy"`
		} `json:"parameters"`
	}
	if err := decodeJSON(w, r, 1<<16, &req); err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	name := r.PathValue("name")
	versions, err := s.oipRepositoryLoad(name, req.Parameters.VersionPolicy)
	if err != nil {
		writeError(w, oipStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "versions": versions})
}

// repositoryUnload answers POST /v2/repository/models/{name}/unload.
func (s *Server) repositoryUnload(w http.ResponseWriter, r *http.Request) {
	if err := s.oipRepositoryUnload(r.PathValue("name")); err != nil {
		writeError(w, oipStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": r.PathValue("name")})
}

func versionStrings(ns []int64) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.FormatInt(n, 10)
	}
	return out
}
