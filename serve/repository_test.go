package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/internal/servetest"
)

// testRepository makes a model repository: fmnist/1 (the test model),
// fmnist/2 (its classes renamed "v2-<id>"), and broken/1 (a flipped byte in
// model.onnx), plus entries that are not versions.
func testRepository(t *testing.T) string {
	t.Helper()
	src, _ := testModel(t)
	root := t.TempDir()
	for _, v := range []string{"fmnist/1", "fmnist/2", "broken/1"} {
		if err := os.CopyFS(filepath.Join(root, v), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	servetest.EditManifest(t, filepath.Join(root, "fmnist/2"), servetest.RenameClasses("v2-"))
	servetest.FlipByte(t, filepath.Join(root, "broken/1", bundle.ModelFile))
	for _, dir := range []string{"fmnist/.3.new-123", "fmnist/03", "fmnist/latest", ".hidden/1"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// adminPost posts body to the admin API and returns the status and body.
func adminPost(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// bestName classifies img with /v1/classify?model=fmnist[&version=v] and
// returns the best class's name, or the status and error.
func bestName(t *testing.T, url string, version string, img []byte) string {
	t.Helper()
	q := "?model=fmnist"
	if version != "" {
		q += "&version=" + version
	}
	resp, err := http.Post(url+"/v1/classify"+q, "image/png", bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var res struct {
		Predictions []struct{ Name string }
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &res) != nil {
		return fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return res.Predictions[0].Name
}

// TestRepository serves a repository and drives the repository API: the
// latest version serves, a version that does not verify never does, the
// index says why each version is or is not served, a pinned policy rolls
// back, latest:2 serves both, unload and load again, and a new version
// that does not verify leaves the old one serving.
func TestRepository(t *testing.T) {
	root := testRepository(t)
	_, test := testModel(t)
	var log servetest.SyncBuffer
	cfg := testConfig("")
	cfg.Model, cfg.Repository, cfg.Log = "", root, &log
	s := newTestServer(t, cfg)
	public := httptest.NewServer(s.Public)
	defer public.Close()
	admin := httptest.NewServer(s.Admin)
	defer admin.Close()
	img := encodePNG(t, fashionImage(test, 5))
	original := bestName(t, public.URL, "", bytes.Clone(img))

	if !strings.HasPrefix(original, "v2-") {
		t.Errorf("latest version: best class %q, want version 2's renamed classes", original)
	}
	checkRepositoryIndex(t, log.String(), public.URL, admin.URL)

	checkRepositoryPolicies(t, public.URL, admin.URL, img)

	// A new version that does not verify: the load fails, version 2 serves on.
	if err := os.CopyFS(filepath.Join(root, "fmnist/3"), os.DirFS(filepath.Join(root, "fmnist/1"))); err != nil {
		t.Fatal(err)
	}
	servetest.FlipByte(t, filepath.Join(root, "fmnist/3", bundle.BackboneFile))
	code, body := adminPost(t, admin.URL+"/v2/repository/models/fmnist/load", "")
	if code != 500 || !strings.Contains(body, "still serving versions [2]") || !strings.Contains(body, "version 3: ") || !strings.Contains(body, "fmnist/3/backbone.onnx: model file checksum mismatch") {
		t.Errorf("load of a damaged version 3: %d %s", code, body)
	}
	if got := bestName(t, public.URL, "", img); got != original {
		t.Errorf("after the failed load: %q, want version 2's %q", got, original)
	}

	checkRepositoryRefusals(t, public.URL, admin.URL)
}

// checkRepositoryIndex checks the repository index of TestRepository's
// server at its start, and that logged says why model broken failed.
func checkRepositoryIndex(t *testing.T, logged, public, admin string) {
	if l := logged; !strings.Contains(l, "model broken: load failed: version 1: ") || !strings.Contains(l, "broken/1/model.onnx: model file checksum mismatch") {
		t.Errorf("the log does not say why broken failed:\n%s", logged)
	}
	code, index := adminPost(t, admin+"/v2/repository/index", "")
	for _, want := range []string{
		`{"name":"broken","version":"1","state":"UNAVAILABLE","reason":"model broken: load failed: version 1: `,
		`broken/1/model.onnx: model file checksum mismatch`,
		`{"name":"fmnist","version":"1","state":"UNAVAILABLE","reason":"not selected by the version policy latest:1"}`,
		`{"name":"fmnist","version":"2","state":"READY"}`,
	} {
		if code != 200 || !strings.Contains(index, want) {
			t.Errorf("index %d %s lacks %s", code, index, want)
		}
	}
	if strings.Contains(index, `"name":".hidden"`) || strings.Contains(index, `"version":"03"`) || strings.Contains(index, `"version":"latest"`) || strings.Contains(index, `"version":"3"`) {
		t.Errorf("index lists entries that are not models or versions: %s", index)
	}
	if code, body := servetest.GetAny(t, public+"/v2/models/broken/ready"); code != 404 {
		t.Errorf("broken ready: %d %s", code, body)
	}
}

// checkRepositoryPolicies pins version 1, serves both versions, unloads
// model fmnist and loads it again with policy latest:1.
func checkRepositoryPolicies(t *testing.T, public, admin string, img []byte) {
	// Roll back to version 1 by pinning it.
	if code, body := adminPost(t, admin+"/v2/repository/models/fmnist/load", `{"parameters": {"version_policy": "specific:1"}}`); code != 200 || body != "{\"name\":\"fmnist\",\"versions\":[\"1\"]}\n" {
		t.Fatalf("load specific:1: %d %s", code, body)
	}
	if got := bestName(t, public, "", img); strings.HasPrefix(got, "v2-") {
		t.Errorf("pinned to version 1: best class %q", got)
	}
	if got := bestName(t, public, "2", img); !strings.HasPrefix(got, "404") {
		t.Errorf("version 2 after the pin: %q, want 404", got)
	}
	// The pin survives a reload.
	if code, body := servetest.PostReload(t, admin); code != 200 || !strings.Contains(body, `"version":"1"`) || strings.Contains(body, `"version":"2"`) {
		t.Errorf("reload after the pin: %d %s", code, body)
	}

	// Both versions.
	if code, body := adminPost(t, admin+"/v2/repository/models/fmnist/load", `{"parameters": {"version_policy": "latest:2"}}`); code != 200 || !strings.Contains(body, `["1","2"]`) {
		t.Fatalf("load latest:2: %d %s", code, body)
	}
	if v1, v2 := bestName(t, public, "1", img), bestName(t, public, "2", img); strings.HasPrefix(v1, "v2-") || !strings.HasPrefix(v2, "v2-") {
		t.Errorf("latest:2: version 1 says %q, version 2 %q", v1, v2)
	}

	// Unload, then load again with the configured policy.
	if code, body := adminPost(t, admin+"/v2/repository/models/fmnist/unload", ""); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	if code, body := servetest.GetAny(t, public+"/v2/models/fmnist/ready"); code != 404 {
		t.Errorf("ready after unload: %d %s", code, body)
	}
	if code, body := adminPost(t, admin+"/v2/repository/models/fmnist/unload", ""); code != 404 {
		t.Errorf("second unload: %d %s", code, body)
	}
	if code, body := adminPost(t, admin+"/v2/repository/models/fmnist/load", `{"parameters": {"version_policy": "latest:1"}}`); code != 200 || !strings.Contains(body, `["2"]`) {
		t.Fatalf("load again: %d %s", code, body)
	}
}

// checkRepositoryRefusals sends repository requests that must fail, each
// with its status and a message naming the problem; the public listener
// has no repository API.
func checkRepositoryRefusals(t *testing.T, public, admin string) {
	for i, c := range []struct {
		path, body string
		status     int
		has        string
	}{
		{"models/nothere/load", "", 404, "no model directory"},
		{"models/fmnist/load", `{"parameters": {"version_policy": "specific:9"}}`, 404, "no version 9"},
		{"models/fmnist/load", `{"parameters": {"version_policy": "oldest"}}`, 400, "want latest, latest:N or specific"},
		{"models/fmnist/load", `{"parameters": `, 400, "request body"},
		{"models/.x/load", "", 400, "model name"},
	} {
		if code, body := adminPost(t, admin+"/v2/repository/"+c.path, c.body); code != c.status || !strings.Contains(body, c.has) {
			t.Errorf("case %d %s %s: %d %s, want %d naming %q", i, c.path, c.body, code, body, c.status, c.has)
		}
	}
	if code, body := servetest.GetAny(t, public+"/v2/repository/index"); code != 405 && code != 404 {
		t.Errorf("the repository API on the public listener: %d %s", code, body)
	}
}

// TestRepositorySwapsUnderLoad sends v1 and v2 requests for the model's
// latest version from 6 clients while the admin API loads and unloads
// versions 1 and 2 (pin 1, pin 2, both, latest) over and over: no request
// may fail, and every answer comes from a version that was loaded.
func TestRepositorySwapsUnderLoad(t *testing.T) {
	root := testRepository(t)
	os.RemoveAll(filepath.Join(root, "broken"))
	_, test := testModel(t)
	cfg := testConfig("")
	cfg.Model, cfg.Repository, cfg.MaxConcurrent, cfg.QueueTimeout = "", root, 2, 10*time.Second
	s := newTestServer(t, cfg)
	public := httptest.NewServer(s.Public)
	defer public.Close()
	admin := httptest.NewServer(s.Admin)
	defer admin.Close()
	img := encodePNG(t, fashionImage(test, 9))
	v2Body, _ := json.Marshal(map[string]any{"inputs": []any{map[string]any{
		"name": "image", "shape": []int{1}, "datatype": "BYTES", "data": []string{base64.StdEncoding.EncodeToString(img)}}}})

	var requests, failures atomic.Int64
	var mu sync.Mutex
	var problems []string
	fail := func(format string, args ...any) {
		failures.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	stop := make(chan struct{})
	client := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				url, body, contentType := public.URL+"/v1/classify", img, "image/png"
				if c%2 == 1 {
					url, body, contentType = public.URL+"/v2/models/fmnist/infer", v2Body, "application/json"
				}
				resp, err := client.Post(url, contentType, bytes.NewReader(body))
				requests.Add(1)
				if err != nil {
					fail("client %d: %v", c, err)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					fail("client %d: %d %s", c, resp.StatusCode, b)
				}
			}
		})
	}
	policies := []string{"specific:1", "specific:2", "latest:2", "latest:1"}
	swaps := 0
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) || swaps < len(policies) {
		p := policies[swaps%len(policies)]
		if code, body := adminPost(t, admin.URL+"/v2/repository/models/fmnist/load", `{"parameters": {"version_policy": "`+p+`"}}`); code != 200 {
			fail("load %s: %d %s", p, code, body)
		}
		swaps++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d requests (v1 and v2) during %d loads and unloads of versions 1 and 2; %d failed", requests.Load(), swaps, failures.Load())
	for _, p := range problems {
		t.Error(p)
	}
	if requests.Load() < 50 {
		t.Errorf("only %d requests", requests.Load())
	}
}

// TestVersionPolicy checks the policy syntax and which versions each
// policy picks from versions 1, 2, 3 and 10.
func TestVersionPolicy(t *testing.T) {
	found := map[int64]string{1: "1", 2: "2", 3: "3", 10: "10"}
	for i, c := range []struct {
		in, picks, err string
	}{
		{"", "10]", ""},
		{"latest", "10]", ""},
		{"latest:2", "3 10]", ""},
		{"latest:9", "1 2 3 10]", ""},
		{"specific:2,1", "1 2]", ""},
		{"specific:4", "", "no version 4"},
		{"specific:01", "", `version "01"`},
		{"specific:", "", "want latest"},
		{"latest:0", "", "want latest versions >= 1"},
		{"latest:-1", "", "want latest versions >= 1"},
		{"latest:x", "", `"x" is not a number`},
		{"all", "", "want latest"},
	} {
		p, err := ParseVersionPolicy(c.in)
		var picked map[int64]string
		if err == nil {
			picked, err = p.pick(found)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("case %d %q: %v, want an error naming %q", i, c.in, err, c.err)
			}
			continue
		}
		var got []string
		for _, n := range []int64{1, 2, 3, 10} {
			if _, ok := picked[n]; ok {
				got = append(got, fmt.Sprint(n))
			}
		}
		if err != nil || strings.Join(got, " ")+"]" != c.picks {
			t.Errorf("case %d %q: picked %v (%v), want %s", i, c.in, got, err, c.picks)
		}
	}
}

// TestNewCancelled checks that a done context stops New before it serves.
func TestNewCancelled(t *testing.T) {
	dir, _ := testModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := New(ctx, testConfig(dir))
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("New with a cancelled context: %v, want context.Canceled", err)
	}
}
