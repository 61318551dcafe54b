// Package jpegbomb writes the progressive JPEGs that decoding budgets are
// tested with: a valid gray image whose AC scan is repeated many times,
// each repetition a few bytes long and a pass over every block. The bytes
// are written from the JPEG specification (ITU T.81: SOF2, DHT, SOS,
// entropy-coded data), so no large file is kept in the repository. Only
// tests import it.
package jpegbomb

import "bytes"

// Progressive returns a side x side gray progressive JPEG (side a multiple
// of 8, at most 65535) of a flat mid-grey image: one DC scan, then scans
// repetitions of the first AC scan (1..63), each coding every block as
// part of end-of-band runs of 32767 blocks. Go's image/jpeg decodes it;
// its work grows with scans x side².
func Progressive(side, scans int) []byte {
	return write(side, scans, []component{{id: 1, hv: 0x11}})
}

// Unsupported is Progressive's bomb declared with three components whose
// sampling Go's image/jpeg does not implement (the chroma sampled more
// finely than the luma), so DecodeImage hands it to its fallback decoder;
// only its scans, not its pixels, are meant to be read.
func Unsupported(side, scans int) []byte {
	return write(side, scans, []component{{id: 1, hv: 0x11}, {id: 2, hv: 0x21}, {id: 3, hv: 0x11}})
}

type component struct{ id, hv byte }

func write(side, scans int, comps []component) []byte {
	var b bytes.Buffer
	segment := func(marker byte, payload ...byte) {
		b.Write([]byte{0xFF, marker, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)})
		b.Write(payload)
	}
	b.Write([]byte{0xFF, 0xD8}) // SOI
	dqt := make([]byte, 65)
	for i := 1; i < 65; i++ {
		dqt[i] = 1
	}
	segment(0xDB, dqt...) // quantisation table 0, all ones
	sof := []byte{8, byte(side >> 8), byte(side), byte(side >> 8), byte(side), byte(len(comps))}
	for _, c := range comps {
		sof = append(sof, c.id, c.hv, 0)
	}
	segment(0xC2, sof...) // SOF2: progressive, Huffman
	// One code each, "0": DC difference category 0; AC symbol 0xE0, an
	// end-of-band run of 2^14 plus 14 extra bits.
	segment(0xC4, append([]byte{0x00, 1}, append(make([]byte, 15), 0x00)...)...)
	segment(0xC4, append([]byte{0x10, 1}, append(make([]byte, 15), 0xE0)...)...)
	blocks := (side / 8) * (side / 8)
	// DC scan of the first component (a valid scan of a gray image).
	segment(0xDA, 1, comps[0].id, 0x00, 0, 0, 0)
	dc := bitWriter{}
	for range blocks {
		dc.put(0, 1)
	}
	b.Write(dc.bytes())
	const run = 1<<15 - 1
	ac := bitWriter{}
	for n := 0; n < blocks; n += run {
		ac.put(0, 1)
		ac.put(1<<14-1, 14)
	}
	acData := ac.bytes()
	for range scans {
		segment(0xDA, 1, comps[0].id, 0x00, 1, 63, 0)
		b.Write(acData)
	}
	b.Write([]byte{0xFF, 0xD9}) // EOI
	return b.Bytes()
}

// bitWriter packs entropy-coded bits most significant first, stuffing a
// zero byte after each 0xFF and padding the last byte with ones.
type bitWriter struct {
	out   []byte
	acc   uint32
	nbits uint
}

func (w *bitWriter) put(bits uint32, n uint) {
	for i := int(n) - 1; i >= 0; i-- {
		w.acc = w.acc<<1 | (bits>>uint(i))&1
		w.nbits++
		if w.nbits == 8 {
			w.emit(byte(w.acc))
			w.acc, w.nbits = 0, 0
		}
	}
}

func (w *bitWriter) emit(c byte) {
	w.out = append(w.out, c)
	if c == 0xFF {
		w.out = append(w.out, 0)
	}
}

func (w *bitWriter) bytes() []byte {
	if w.nbits > 0 {
		pad := 8 - w.nbits
		w.emit(byte(w.acc<<pad | (1<<pad - 1)))
	}
	out := w.out
	w.out, w.acc, w.nbits = nil, 0, 0
	return out
}
