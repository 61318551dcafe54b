package serve

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// The model repository extension's conformance cases
// (triton-inference-server/server, docs/protocol/
// extension_model_repository.md: "Index", "Load", "Unload" and their
// error object), over every transport that serves the repository API, on
// the listener that serves it (the admin one). Transports add their
// client to repositoryClients.

// oipRepositoryClient plays a client of the repository extension.
type oipRepositoryClient interface {
	// index returns the status and "name version state" of each entry.
	index(t *testing.T, ready bool) (int, []string)
	// load and unload return the status and the error, if any.
	load(t *testing.T, model, policy string) (int, string)
	unload(t *testing.T, model string) (int, string)
}

// repositoryClients returns the repository clients of every transport,
// each talking to server s.
func repositoryClients(t *testing.T, s *Server) map[string]oipRepositoryClient {
	admin := httptest.NewServer(s.Admin)
	t.Cleanup(admin.Close)
	return map[string]oipRepositoryClient{"http": &httpClient{url: admin.URL}}
}

// adminPostJSON posts a JSON body (none if empty) and decodes the answer.
func (c *httpClient) adminPostJSON(t *testing.T, path, body string, v any) int {
	t.Helper()
	code, h, b := c.do(t, "POST", path, map[string][]string{"Content-Type": {"application/json"}}, []byte(body))
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("POST %s: content type %q", path, ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("POST %s: %d, not JSON: %q", path, code, b)
	}
	return code
}

func (c *httpClient) index(t *testing.T, ready bool) (int, []string) {
	var entries []struct{ Name, Version, State string }
	var e struct{ Error string }
	body := ""
	if ready {
		body = `{"ready": true}`
	}
	code, _, b := c.do(t, "POST", "/v2/repository/index", nil, []byte(body))
	if err := json.Unmarshal(b, &entries); err != nil {
		if json.Unmarshal(b, &e) != nil {
			t.Fatalf("index: %d, not JSON: %q", code, b)
		}
		return code, []string{e.Error}
	}
	var out []string
	for _, x := range entries {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", x.Name, x.Version, x.State)))
	}
	return code, out
}

func (c *httpClient) load(t *testing.T, model, policy string) (int, string) {
	var a struct{ Error string }
	body := ""
	if policy != "" {
		body = fmt.Sprintf(`{"parameters": {"version_policy": %q}}`, policy)
	}
	return c.adminPostJSON(t, "/v2/repository/models/"+model+"/load", body, &a), a.Error
}

func (c *httpClient) unload(t *testing.T, model string) (int, string) {
	var a struct{ Error string }
	return c.adminPostJSON(t, "/v2/repository/models/"+model+"/unload", "", &a), a.Error
}

// TestConformanceRepositoryExtension drives the repository extension of a
// repository serving fmnist versions 1 and 2 (and broken/1, which does not
// verify): the index, a load pinning a version, a load and unload of what
// is not there, an unload that takes the model off the inference API and
// a load that brings it back; then of a single model, which it lists and
// cannot unload.
func TestConformanceRepositoryExtension(t *testing.T) {
	root := testRepository(t)
	cfg := testConfig("")
	cfg.Model, cfg.Repository, cfg.Policy = "", root, VersionPolicy{Latest: 2}
	s := newTestServer(t, cfg)
	inference := conformanceClients(t, s)["http-json"]
	for transport, c := range repositoryClients(t, s) {
		t.Run(transport, func(t *testing.T) {
			if code, index := c.index(t, false); code != 200 || !slices.Contains(index, "fmnist 1 READY") || !slices.Contains(index, "fmnist 2 READY") || !slices.Contains(index, "broken 1 UNAVAILABLE") {
				t.Errorf("index: %d %v", code, index)
			}
			if code, index := c.index(t, true); code != 200 || fmt.Sprint(index) != "[fmnist 1 READY fmnist 2 READY]" {
				t.Errorf("index of ready models: %d %v", code, index)
			}
			if code, msg := c.load(t, "fmnist", "specific:1"); code != 200 || msg != "" {
				t.Errorf("load specific:1: %d %q", code, msg)
			}
			if m := inference.modelMetadata(t, "fmnist", ""); fmt.Sprint(m.versions) != "[1]" {
				t.Errorf("after specific:1, versions %v", m.versions)
			}
			for _, e := range []struct {
				model, policy string
				status        int
				has           string
			}{
				{"nothere", "", 404, "no model directory"},
				{"fmnist", "specific:9", 404, "no version 9"},
				{"fmnist", "oldest", 400, "want latest, latest:N or specific"},
				{".x", "", 400, "model name"},
				{"broken", "", 500, "checksum mismatch"},
			} {
				if code, msg := c.load(t, e.model, e.policy); code != e.status || !strings.Contains(msg, e.has) {
					t.Errorf("load %s %q: %d %q, want %d naming %q", e.model, e.policy, code, msg, e.status, e.has)
				}
			}
			if code, msg := c.unload(t, "broken"); code != 404 || !strings.Contains(msg, "not loaded") {
				t.Errorf("unload of a model not loaded: %d %q", code, msg)
			}
			if code, msg := c.unload(t, "fmnist"); code != 200 || msg != "" {
				t.Errorf("unload: %d %q", code, msg)
			}
			if code, _ := inference.modelReady(t, "fmnist", ""); code != 404 {
				t.Errorf("ready after unload: %d, want 404", code)
			}
			if code, index := c.index(t, false); code != 200 || !slices.Contains(index, "fmnist 2 UNAVAILABLE") {
				t.Errorf("index after unload: %d %v", code, index)
			}
			if code, msg := c.load(t, "fmnist", "latest:2"); code != 200 || msg != "" {
				t.Errorf("load latest:2: %d %q", code, msg)
			}
			if m := inference.modelMetadata(t, "fmnist", ""); fmt.Sprint(m.versions) != "[1 2]" {
				t.Errorf("after latest:2, versions %v", m.versions)
			}
		})
	}

	dir, _ := testModel(t)
	single := newTestServer(t, testConfig(dir))
	for transport, c := range repositoryClients(t, single) {
		t.Run(transport+"/one model", func(t *testing.T) {
			if code, index := c.index(t, false); code != 200 || fmt.Sprint(index) != "[bicyc 1 READY]" {
				t.Errorf("index: %d %v", code, index)
			}
			if code, msg := c.unload(t, "bicyc"); code != 400 || !strings.Contains(msg, "nothing to unload") {
				t.Errorf("unload: %d %q, want 400", code, msg)
			}
			if code, msg := c.load(t, "bicyc", ""); code != 200 || msg != "" {
				t.Errorf("load (a reload): %d %q", code, msg)
			}
		})
	}
}
