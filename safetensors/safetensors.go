package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"unicode/utf8"

	"github.com/bicyc/bicyc/durable"
)

// Tensor is a named, dense, row-major float32 tensor.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Len is the number of elements the shape declares.
func (t Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// maxHeader bounds the JSON header so a corrupt length cannot make Read
// allocate gigabytes.
const maxHeader = 100 << 20

// ErrFormat is wrapped by every error that describes malformed file content.
var ErrFormat = errors.New("malformed safetensors data")

type entry struct {
	Dtype   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// Write encodes tensors and metadata to w. Tensors are stored in name order,
// which makes the output deterministic; names must be unique, valid UTF-8
// (as must the metadata: JSON would silently replace invalid bytes, and the
// file would not give the strings back) and every tensor's data length must
// match its shape.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	sorted := append([]Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := make(map[string]any, len(sorted)+1)
	if len(metadata) > 0 {
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return fmt.Errorf("safetensors: metadata %q: %q is not valid UTF-8", k, v)
			}
		}
		header["__metadata__"] = metadata
	}
	var off int64
	for i, t := range sorted {
		if t.Name == "" || t.Name == "__metadata__" || !utf8.ValidString(t.Name) {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if i > 0 && sorted[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		if t.Len() != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q has shape %v but %d values", t.Name, t.Shape, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		n := int64(len(t.Data)) * 4
		header[t.Name] = entry{Dtype: "F32", Shape: shape, Offsets: [2]int64{off, off + n}}
		off += n
	}
	hdr, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors: encode header: %w", err)
	}
	// Pad the header with spaces to a multiple of 8 bytes, as the reference
	// implementation does, so the data is aligned.
	if pad := (8 - len(hdr)%8) % 8; pad > 0 {
		hdr = append(hdr, bytes.Repeat([]byte(" "), pad)...)
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	buf := make([]byte, 0, 8+len(hdr)+int(off))
	buf = append(buf, lenBuf[:]...)
	buf = append(buf, hdr...)
	for _, t := range sorted {
		for _, v := range t.Data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	}
	_, err = w.Write(buf)
	return err
}

// Decode parses a whole safetensors file held in memory. As in the
// reference implementation, the tensors' data ranges must tile the data
// section exactly: taken in offset order each starts where the previous one
// ends, the first at 0 and the last at the end of the file. So tensors
// never share bytes and the decoded values never take more memory than the
// file. It never panics on malformed input; errors wrap ErrFormat.
func Decode(b []byte) ([]Tensor, map[string]string, error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("%w: %d bytes, shorter than the 8-byte header length", ErrFormat, len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > maxHeader || n > uint64(len(b)-8) {
		return nil, nil, fmt.Errorf("%w: header length %d exceeds the %d bytes that follow", ErrFormat, n, len(b)-8)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	data := b[8+n:]
	var meta map[string]string
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	spans := make([]span, 0, len(names))
	for _, name := range names {
		if name == "__metadata__" {
			if err := json.Unmarshal(raw[name], &meta); err != nil {
				return nil, nil, fmt.Errorf("%w: metadata: %v", ErrFormat, err)
			}
			continue
		}
		if name == "" {
			return nil, nil, fmt.Errorf("%w: a tensor has an empty name", ErrFormat)
		}
		sp, err := parseSpan(name, raw[name], int64(len(data)))
		if err != nil {
			return nil, nil, err
		}
		spans = append(spans, sp)
	}
	if err := checkTiling(spans, int64(len(data))); err != nil {
		return nil, nil, err
	}
	tensors := make([]Tensor, 0, len(spans))
	for _, s := range spans {
		vals := make([]float32, (s.hi-s.lo)/s.size)
		src := data[s.lo:s.hi]
		for i := range vals {
			if s.size == 4 {
				vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			} else {
				vals[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
			}
		}
		tensors = append(tensors, Tensor{Name: s.name, Shape: append([]int{}, s.shape...), Data: vals})
	}
	return tensors, meta, nil
}

// ReadFile reads and decodes the file at path; errors name the file.
func ReadFile(path string) ([]Tensor, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	ts, meta, err := Decode(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, meta, nil
}

// WriteFile writes tensors to path with durable.WriteFile: a crash leaves
// either the old file or the new one, never a partial file.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	var buf bytes.Buffer
	if err := Write(&buf, tensors, metadata); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return durable.WriteFile(path, buf.Bytes())
}

// Find returns the tensor called name.
func Find(tensors []Tensor, name string) (Tensor, bool) {
	for _, t := range tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// span is one tensor's entry in a safetensors header, checked against the
// data section.
type span struct {
	name   string
	shape  []int
	size   int64 // bytes per value
	lo, hi int64
}

// parseSpan decodes the header entry of tensor name and checks its dtype,
// shape and offsets against a data section of dataLen bytes.
func parseSpan(name string, raw json.RawMessage, dataLen int64) (span, error) {
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return span{}, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
	}
	size := int64(4)
	switch e.Dtype {
	case "F32":
	case "F64":
		size = 8
	default:
		return span{}, fmt.Errorf("%w: tensor %q has dtype %q, want F32 or F64", ErrFormat, name, e.Dtype)
	}
	count := int64(1)
	for _, d := range e.Shape {
		if d < 0 || (d > 0 && count > math.MaxInt32/int64(d)) {
			return span{}, fmt.Errorf("%w: tensor %q has invalid shape %v", ErrFormat, name, e.Shape)
		}
		count *= int64(d)
	}
	lo, hi := e.Offsets[0], e.Offsets[1]
	if lo < 0 || hi < lo || hi > dataLen || hi-lo != count*size {
		return span{}, fmt.Errorf("%w: tensor %q: offsets [%d,%d) do not fit shape %v of %s in %d data bytes",
			ErrFormat, name, lo, hi, e.Shape, e.Dtype, dataLen)
	}
	return span{name: name, shape: e.Shape, size: size, lo: lo, hi: hi}, nil
}

// checkTiling checks that the spans, taken in offset order, tile the
// dataLen bytes of the data section exactly.
func checkTiling(spans []span, dataLen int64) error {
	byOffset := append([]span(nil), spans...)
	sort.SliceStable(byOffset, func(i, j int) bool {
		return byOffset[i].lo < byOffset[j].lo || (byOffset[i].lo == byOffset[j].lo && byOffset[i].hi < byOffset[j].hi)
	})
	var end int64
	for _, s := range byOffset {
		if s.lo != end {
			return fmt.Errorf("%w: tensor %q: data starts at offset %d, want %d (tensors must not overlap or leave gaps)",
				ErrFormat, s.name, s.lo, end)
		}
		end = s.hi
	}
	if end != dataLen {
		return fmt.Errorf("%w: tensors cover %d of the %d data bytes", ErrFormat, end, dataLen)
	}
	return nil
}
