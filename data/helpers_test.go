package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// fashionMNIST loads the real Fashion-MNIST once for all tests.
var fashionMNIST = sync.OnceValues(func() ([2]*Dataset, error) {
	train, test, err := LoadFashionMNIST("")
	return [2]*Dataset{train, test}, err
})

func loadFashionMNIST(t testing.TB) (train, test *Dataset) {
	t.Helper()
	ds, err := fashionMNIST()
	if err != nil {
		t.Fatalf("LoadFashionMNIST: %v", err)
	}
	return ds[0], ds[1]
}

// idxBytes encodes an IDX file with the given type code, dimensions and
// payload (the payload may disagree with the dimensions on purpose).
func idxBytes(typ byte, dims []uint32, payload []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, typ, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(payload)
	return b.Bytes()
}

func gzipBytes(t testing.TB, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeFile writes content to path, creating parent folders.
func writeFile(t testing.TB, path string, content []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
}
