package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// encoded returns Write's bytes for tensors and metadata; it fails tb on
// error, so seeds are known-good files.
func encoded(tb testing.TB, tensors []Tensor, metadata map[string]string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, tensors, metadata); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// rawFile builds a file from a literal JSON header and data bytes, for
// seeds and regression inputs that Write cannot produce.
func rawFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// sameTensors reports whether a and b hold the same names, shapes and
// bit-identical values (NaN payloads included), in order.
func sameTensors(a, b []Tensor) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d tensors, want %d", len(b), len(a))
	}
	for i := range a {
		if a[i].Name != b[i].Name || !slices.Equal(a[i].Shape, b[i].Shape) || len(a[i].Data) != len(b[i].Data) {
			return fmt.Errorf("tensor %d is %q %v with %d values, want %q %v with %d values",
				i, b[i].Name, b[i].Shape, len(b[i].Data), a[i].Name, a[i].Shape, len(a[i].Data))
		}
		for j := range a[i].Data {
			if math.Float32bits(a[i].Data[j]) != math.Float32bits(b[i].Data[j]) {
				return fmt.Errorf("tensor %q value %d is %v, want %v", a[i].Name, j, b[i].Data[j], a[i].Data[j])
			}
		}
	}
	return nil
}

// sameMetadata treats a nil and an empty map as equal: Write omits an
// empty "__metadata__".
func sameMetadata(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// FuzzDecode feeds arbitrary bytes to Decode. Invariants: every error wraps
// ErrFormat; a decoded file has unique, sorted, writable names and data
// that matches each shape; the decoded values take at most the bytes of the
// data section (4 bytes per float32; tensors cannot share data bytes); and
// Write then Decode gives back exactly what Decode returned.
func FuzzDecode(f *testing.F) {
	nan := math.Float32frombits(0x7fc00001)
	f.Add(encoded(f, nil, nil))
	f.Add(encoded(f, []Tensor{{Name: "w", Shape: []int{2, 3}, Data: []float32{1, -2, 3.5, 0, nan, float32(math.Inf(-1))}}},
		map[string]string{"format": "pt"}))
	f.Add(encoded(f, []Tensor{{Name: "scalar", Data: []float32{7}}, {Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
		{Name: "b", Shape: []int{1}, Data: []float32{-1}}}, nil))
	f.Add(rawFile(`{"x":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}`,
		binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1)), math.Float64bits(-1e300))))
	f.Add(rawFile(`{"__metadata__":{"a":"b"},"i":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Fuzz(func(t *testing.T, b []byte) {
		tensors, meta, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		var values int
		for i, tn := range tensors {
			if tn.Name == "" || tn.Name == "__metadata__" || (i > 0 && tensors[i-1].Name >= tn.Name) {
				t.Fatalf("tensor %d name %q: names must be non-empty, unique and sorted", i, tn.Name)
			}
			if tn.Len() != len(tn.Data) {
				t.Fatalf("tensor %q has shape %v but %d values", tn.Name, tn.Shape, len(tn.Data))
			}
			values += len(tn.Data)
		}
		if dataBytes := len(b) - 8 - int(binary.LittleEndian.Uint64(b)); 4*values > dataBytes {
			t.Fatalf("%d data bytes decoded to %d float32 values (%d bytes)", dataBytes, values, 4*values)
		}
		again, meta2, err := Decode(encoded(t, tensors, meta))
		if err != nil {
			t.Fatalf("Decode(Write(Decode(b))): %v", err)
		}
		if err := sameTensors(tensors, again); err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if !sameMetadata(meta, meta2) {
			t.Fatalf("round trip metadata %q, want %q", meta2, meta)
		}
	})
}

// FuzzWriteDecode writes tensors built from fuzzed names, dimensions and
// value bits, then decodes them. Invariants: Write either refuses with an
// error that names the problem or produces a file that Decode returns
// bit-identically (tensors sorted by name), metadata included.
func FuzzWriteDecode(f *testing.F) {
	f.Add("weight", "bias", []byte{2, 3}, []byte{1, 0, 0x80, 0x3f, 0, 0, 0xc0, 0x7f}, "format", "pt")
	f.Add("a", "a", []byte{1}, []byte{}, "", "")
	f.Add("", "__metadata__", []byte{}, []byte{1, 2, 3, 4, 5}, "k", "v")
	f.Add("z\xff", "b", []byte{0, 4}, []byte{9}, "m\xfe", "\x00")
	f.Fuzz(func(t *testing.T, name1, name2 string, dims, bits []byte, key, value string) {
		// Dimensions are small (0..4, at most four) so sizes stay tiny; the
		// second tensor takes the first's dimensions reversed.
		shape := make([]int, 0, 4)
		for _, d := range dims[:min(len(dims), 4)] {
			shape = append(shape, int(d%5))
		}
		tensors := []Tensor{{Name: name1, Shape: shape}, {Name: name2, Shape: slices.Clone(shape)}}
		slices.Reverse(tensors[1].Shape)
		var k int
		for i := range tensors {
			tensors[i].Data = make([]float32, tensors[i].Len())
			for j := range tensors[i].Data {
				if len(bits) >= 4 {
					tensors[i].Data[j] = math.Float32frombits(binary.LittleEndian.Uint32(bits[(4*k)%(len(bits)-3):]))
				}
				k++
			}
		}
		var meta map[string]string
		if key != "" {
			meta = map[string]string{key: value}
		}
		var buf bytes.Buffer
		if err := Write(&buf, tensors, meta); err != nil {
			if !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Fatalf("Write error %q lacks the package prefix", err)
			}
			return
		}
		got, gotMeta, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatalf("Decode(Write(x)): %v", err)
		}
		want := slices.Clone(tensors)
		slices.SortFunc(want, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
		if err := sameTensors(want, got); err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if !sameMetadata(meta, gotMeta) {
			t.Fatalf("round trip metadata %q, want %q", gotMeta, meta)
		}
	})
}

// TestDecodeRegressions pins inputs the fuzzers found or that break an
// invariant of FuzzDecode; each must fail with ErrFormat and say why.
func TestDecodeRegressions(t *testing.T) {
	// sharedData lists n tensors that all claim the same 4 KiB. Before
	// Decode required tensors to tile the data, the file of n = 2000
	// (140 KB) decoded to 8 MB: n times the data, so a file of a few MB
	// could ask for gigabytes.
	sharedData := func(n int) []byte {
		var h strings.Builder
		h.WriteString("{")
		for i := range n {
			if i > 0 {
				h.WriteString(",")
			}
			fmt.Fprintf(&h, `"t%d":{"dtype":"F32","shape":[1024],"data_offsets":[0,4096]}`, i)
		}
		h.WriteString("}")
		return rawFile(h.String(), make([]byte, 4096))
	}
	for i, c := range []struct {
		in   []byte
		text string
	}{
		{sharedData(2), "must not overlap"},
		{sharedData(2000), "must not overlap"},
		{rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "starts at offset 4, want 0"},
		{rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 8)), "cover 4 of the 8 data bytes"},
		{rawFile(`{"":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, make([]byte, 4)), "empty name"},
	} {
		_, _, err := Decode(c.in)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("case %d: error %v, want ErrFormat saying %q", i, err, c.text)
		}
	}
}

// TestWriteRefusesInvalidUTF8 pins the FuzzWriteDecode finding: JSON
// replaces invalid UTF-8 with U+FFFD, so Write used to produce files whose
// tensor names or metadata did not read back as written.
func TestWriteRefusesInvalidUTF8(t *testing.T) {
	for i, c := range []struct {
		tensors []Tensor
		meta    map[string]string
	}{
		{[]Tensor{{Name: "z\xff", Data: []float32{1}}}, nil},
		{nil, map[string]string{"m\xfe": "v"}},
		{nil, map[string]string{"k": "\xc3("}},
	} {
		err := Write(io.Discard, c.tensors, c.meta)
		if err == nil || !strings.Contains(err.Error(), "UTF-8") && !strings.Contains(err.Error(), "invalid tensor name") {
			t.Errorf("case %d: error %v, want a refusal of the invalid UTF-8", i, err)
		}
	}
}
