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

	"github.com/bicyc/bicyc/durable"
)

// ErrCollectionFull is returned by Collector.Save once the directory holds
// its maximum number of files or bytes; the image is not saved.
var ErrCollectionFull = errors.New("unknown-image collection is full")

// Collector saves images a Classifier answered Unknown, as the bytes that
// arrived (never re-encoded), into one directory, so they can be labelled
// into class folders and given to AddClasses or `bicyc learn`. It is bounded
// by a number of files and of bytes, counting what the directory already
// holds; each file is named by the SHA-256 of its content and written
// atomically without ever overwriting (durable.CreateFile), so the same
// image arriving twice is kept once. A Collector is safe for concurrent
// use.
type Collector struct {
	dir      string
	maxFiles int
	maxBytes int64

	mu    sync.Mutex
	files int
	bytes int64
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
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("collect unknown images: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("collect unknown images: %w", err)
		}
		c.files++
		c.bytes += info.Size()
	}
	return c, nil
}

// Dir returns the collection directory.
func (c *Collector) Dir() string { return c.dir }

// Save stores one image's bytes as <sha256 prefix>.<format> (format as
// DecodeImage names it: "png", "jpeg", ...) and returns the file's path.
// An image already collected returns its path and saves nothing; one that
// would pass a limit returns ErrCollectionFull.
func (c *Collector) Save(image []byte, format string) (string, error) {
	sum := sha256.Sum256(image)
	name := hex.EncodeToString(sum[:12]) + "." + extension(format)
	path := filepath.Join(c.dir, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if c.files+1 > c.maxFiles || c.bytes+int64(len(image)) > c.maxBytes {
		return "", fmt.Errorf("%s: %w (%d files, %d bytes; limits %d files, %d bytes)", c.dir, ErrCollectionFull, c.files, c.bytes, c.maxFiles, c.maxBytes)
	}
	err := durable.CreateFile(path, image)
	switch {
	case errors.Is(err, fs.ErrExist):
		return path, nil // another process saved the same image
	case err != nil:
		return "", err
	}
	c.files++
	c.bytes += int64(len(image))
	return path, nil
}

// extension is the file extension IsImageFile accepts for a format name.
func extension(format string) string {
	switch format {
	case "jpeg":
		return "jpg"
	case "png", "gif", "bmp", "tiff", "webp":
		return format
	}
	return "img"
}
