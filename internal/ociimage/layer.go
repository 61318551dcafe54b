package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// Entry is one file, directory or symbolic link of a layer. Exactly one of
// Source (a file on this machine whose contents are copied), Data (the
// contents), Link (a symbolic link's target) or Dir is set.
type Entry struct {
	Path     string // absolute path inside the image
	Mode     int64  // permission bits (and sticky bit), e.g. 0o755
	UID, GID int
	Source   string
	Data     []byte
	Link     string
	Dir      bool
}

// Layer is a compressed layer ready to be written: Blob is its tar+gzip
// bytes, Digest their sha256, DiffID the sha256 of the uncompressed tar (the
// configuration's rootfs lists those).
type Layer struct {
	Blob           []byte
	Digest, DiffID string
	Comment        string // the configuration's history entry for it
}

// BuildLayer writes entries as a layer. The parent directories of every
// entry are added (root-owned, 0755) unless listed; entries are sorted by
// path and all carry the modification time mtime, so the same entries give
// the same bytes. A path listed twice is an error.
func BuildLayer(entries []Entry, mtime time.Time, comment string) (Layer, error) {
	byPath := map[string]Entry{}
	for _, e := range entries {
		p := path.Clean(e.Path)
		if !path.IsAbs(p) || p == "/" {
			return Layer{}, fmt.Errorf("ociimage: entry path %q: want an absolute path below /", e.Path)
		}
		if _, dup := byPath[p]; dup {
			return Layer{}, fmt.Errorf("ociimage: %s listed twice", p)
		}
		e.Path = p
		byPath[p] = e
	}
	for p := range byPath {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = Entry{Path: d, Mode: 0o755, Dir: true}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, p := range paths {
		if err := writeEntry(tw, byPath[p], mtime); err != nil {
			return Layer{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Layer{}, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return Layer{}, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return Layer{}, err
	}
	if err := zw.Close(); err != nil {
		return Layer{}, err
	}
	return Layer{Blob: gz.Bytes(), Digest: digest(gz.Bytes()), DiffID: digest(raw.Bytes()), Comment: comment}, nil
}

func writeEntry(tw *tar.Writer, e Entry, mtime time.Time) error {
	h := &tar.Header{
		Name: strings.TrimPrefix(e.Path, "/"), Mode: e.Mode, Uid: e.UID, Gid: e.GID,
		ModTime: mtime,
	}
	var body []byte
	switch {
	case e.Dir:
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
	case e.Link != "":
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
	case e.Source != "":
		b, err := os.ReadFile(e.Source)
		if err != nil {
			return fmt.Errorf("ociimage: %s: %w", e.Path, err)
		}
		h.Typeflag, body = tar.TypeReg, b
	default:
		h.Typeflag, body = tar.TypeReg, e.Data
	}
	h.Size = int64(len(body))
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("ociimage: %s: %w", e.Path, err)
	}
	_, err := io.Copy(tw, bytes.NewReader(body))
	return err
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
