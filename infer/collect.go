package infer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bicyc/bicyc/durable"
)

// ErrCollectionFull is returned by Collector.Save once the directory holds
// its maximum number of files or bytes; the image is not saved.
var ErrCollectionFull = errors.New("unknown-image collection is full")

// Collector saves images a Classifier answered Unknown, as the bytes that
// arrived (never re-encoded), into one directory, so they can be labelled
// into class folders and given to AddClasses or `bicyc learn`. It is bounded
// by a number of files and of bytes, counting what the directory holds now:
// the directory is counted again whenever it changed since the last count
// (its modification time: files moved out to be labelled, or written by
// another process) and before refusing a save as full, so collection
// resumes as soon as room is made, without a restart. Each file is named
// by the SHA-256 of its content and written atomically without ever
// overwriting (durable.CreateFile), so the same image arriving twice is
// kept once. Several processes may share a directory: each counts what
// the others wrote before its next save, so together they pass a limit by
// at most the saves in flight at one moment. A Collector is safe for
// concurrent use.
type Collector struct {
	dir      string
	maxFiles int
	maxBytes int64

	mu      sync.Mutex
	files   int
	bytes   int64
	counted time.Time // the directory's modification time when last counted
}

// NewCollector prepares dir (creating it if needed) to hold at most
// maxFiles files of at most maxBytes bytes in all, both >= 1. Files already
// in dir count toward the limits.
func NewCollector(dir string, maxFiles int, maxBytes int64) (*Collector, error) {
	if maxFiles < 1 || maxBytes < 1 {
		return nil, fmt.Errorf("collect unknown images in %s: limits of %d files and %d bytes, want both >= 1", dir, maxFiles, maxBytes)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("collect unknown images: %w", err)
	}
	c := &Collector{dir: dir, maxFiles: maxFiles, maxBytes: maxBytes}
	if err := c.Recount(); err != nil {
		return nil, err
	}
	return c, nil
}

// Dir returns the collection directory.
func (c *Collector) Dir() string { return c.dir }

// Recount counts the files in the directory again (a server calls it at
// reload); Save does so by itself when the directory changed.
func (c *Collector) Recount() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recount()
}

// recount counts the visible regular files of the directory and their
// bytes; c.mu is held.
func (c *Collector) recount() error {
	info, err := os.Stat(c.dir)
	if err != nil {
		return fmt.Errorf("collect unknown images: %w", err)
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("collect unknown images: %w", err)
	}
	files, bytes := 0, int64(0)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // moved out meanwhile
		}
		if err != nil {
			return fmt.Errorf("collect unknown images: %w", err)
		}
		files++
		bytes += fi.Size()
	}
	c.files, c.bytes, c.counted = files, bytes, info.ModTime()
	return nil
}

// Save stores one image's bytes as <sha256 prefix>.<format> (format as
// imaging.DecodeImage names it: "png", "jpeg", ...) and returns the file's path
// and whether this call wrote it. An image already collected returns its
// path and written false; one that would pass a limit, counted afresh,
// returns ErrCollectionFull.
func (c *Collector) Save(image []byte, format string) (path string, written bool, err error) {
	sum := sha256.Sum256(image)
	name := hex.EncodeToString(sum[:12]) + "." + extension(format)
	path = filepath.Join(c.dir, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path, false, nil
	}
	if info, err := os.Stat(c.dir); err != nil || !info.ModTime().Equal(c.counted) || c.wouldPass(len(image)) {
		if err := c.recount(); err != nil {
			return "", false, err
		}
	}
	if c.wouldPass(len(image)) {
		return "", false, fmt.Errorf("%s: %w (%d files, %d bytes; limits %d files, %d bytes)", c.dir, ErrCollectionFull, c.files, c.bytes, c.maxFiles, c.maxBytes)
	}
	err = durable.CreateFile(path, image)
	switch {
	case errors.Is(err, fs.ErrExist):
		return path, false, nil // another process saved the same image
	case err != nil:
		return "", false, err
	}
	c.files++
	c.bytes += int64(len(image))
	// This write changed the directory's time; another writer's at the
	// same moment would be missed until the next change or a full count.
	if info, err := os.Stat(c.dir); err == nil {
		c.counted = info.ModTime()
	}
	return path, true, nil
}

// wouldPass reports whether saving n more bytes passes a limit; c.mu is held.
func (c *Collector) wouldPass(n int) bool {
	return c.files+1 > c.maxFiles || c.bytes+int64(n) > c.maxBytes
}

// extension is the file extension imaging.IsImageFile accepts for a format name.
func extension(format string) string {
	switch format {
	case "jpeg":
		return "jpg"
	case "png", "gif", "bmp", "tiff", "webp":
		return format
	}
	return "img"
}
