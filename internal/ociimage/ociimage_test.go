package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

func TestBuildLayerSameBytesAnyOrder(t *testing.T) {
	mtime := time.Unix(1795724024, 0)
	a := []Entry{
		{Path: "/usr/local/bin/tool", Mode: 0o755, Data: []byte("#!")},
		{Path: "/home/u", Mode: 0o755, UID: 10001, GID: 10001, Dir: true},
		{Path: "/lib", Link: "usr/lib"},
	}
	b := []Entry{a[2], a[0], a[1]}
	la, err := BuildLayer(a, mtime, "x")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := BuildLayer(b, mtime, "x")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(la.Blob, lb.Blob) || la.DiffID != lb.DiffID {
		t.Fatal("the same entries in another order gave another layer")
	}
	// The tar lists the parents first, sorted, with the owners and times asked for.
	zr, err := gzip.NewReader(bytes.NewReader(la.Blob))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(mtime) {
			t.Errorf("%s: mtime %v", h.Name, h.ModTime)
		}
		if h.Name == "home/u/" && (h.Uid != 10001 || h.Gid != 10001) {
			t.Errorf("home/u/ owned by %d:%d", h.Uid, h.Gid)
		}
		got = append(got, h.Name)
	}
	want := "home/ home/u/ lib usr/ usr/local/ usr/local/bin/ usr/local/bin/tool"
	if strings.Join(got, " ") != want {
		t.Fatalf("entries %q, want %q", strings.Join(got, " "), want)
	}
	if _, err := BuildLayer(append(a, Entry{Path: "/lib/", Dir: true}), mtime, "x"); err == nil {
		t.Fatal("a path listed twice was accepted")
	}
}

func TestWriteArchiveDigestsMatch(t *testing.T) {
	l, err := BuildLayer([]Entry{{Path: "/a", Mode: 0o644, Data: []byte("a")}}, time.Unix(0, 0), "a")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	imgs := []Image{{Ref: "localhost/x:1", Layers: []Layer{l}}, {Ref: "localhost/x:1-gpu", Layers: []Layer{l, l}}}
	if err := WriteArchive(&buf, imgs, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 2 {
		t.Fatalf("index lists %d manifests, want 2", len(index.Manifests))
	}
	check := func(d descriptor) []byte {
		b, ok := files[blobPath(d.Digest)]
		if !ok || digest(b) != d.Digest || len(b) != d.Size {
			t.Fatalf("blob %s missing or not matching its descriptor", d.Digest)
		}
		return b
	}
	for _, m := range index.Manifests {
		var man struct {
			Config descriptor   `json:"config"`
			Layers []descriptor `json:"layers"`
		}
		if err := json.Unmarshal(check(m), &man); err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Rootfs struct {
				DiffIDs []string `json:"diff_ids"`
			} `json:"rootfs"`
		}
		if err := json.Unmarshal(check(man.Config), &cfg); err != nil {
			t.Fatal(err)
		}
		if len(cfg.Rootfs.DiffIDs) != len(man.Layers) {
			t.Fatalf("%d diff ids for %d layers", len(cfg.Rootfs.DiffIDs), len(man.Layers))
		}
		for i, ld := range man.Layers {
			zr, err := gzip.NewReader(bytes.NewReader(check(ld)))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(zr)
			if digest(raw) != cfg.Rootfs.DiffIDs[i] {
				t.Fatalf("layer %d: diff id does not match its uncompressed tar", i)
			}
		}
	}
	var docker []struct{ RepoTags []string }
	if err := json.Unmarshal(files["manifest.json"], &docker); err != nil || len(docker) != 2 || docker[1].RepoTags[0] != "localhost/x:1-gpu" {
		t.Fatalf("manifest.json %s (%v)", files["manifest.json"], err)
	}
}
