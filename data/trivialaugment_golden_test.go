package data

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
	"strings"
	"testing"
)

// goldenImage is one test image of testdata/trivialaugment/gen.py.
type goldenImage struct {
	pix     []uint8
	c, h, w int
}

// goldenImages rebuilds the images of testdata/trivialaugment/gen.py: a
// Fashion-MNIST image, a 3x32x32 (CIFAR-sized) image of three more with a
// patterned border, a small non-square synthetic RGB image and a 15x30 gray
// one on which 90-degree turns sample exactly between pixels.
func goldenImages(t *testing.T) map[string]goldenImage {
	train, _ := loadFashionMNIST(t)
	rgb32 := make([]uint8, 3*32*32)
	for ch := range 3 {
		fm := train.Image(4 + ch)
		for y := range 32 {
			for x := range 32 {
				v := uint8((x*8 + y*3 + ch*50) % 256)
				if y >= 2 && y < 30 && x >= 2 && x < 30 {
					v = fm[(y-2)*28+x-2]
				}
				rgb32[(ch*32+y)*32+x] = v
			}
		}
	}
	small := make([]uint8, 3*9*13)
	for ch := range 3 {
		for y := range 9 {
			for x := range 13 {
				small[(ch*9+y)*13+x] = uint8((ch*97 + y*31 + x*17 + (x*y)%7*11) % 256)
			}
		}
	}
	odd := make([]uint8, 15*30)
	for y := range 15 {
		for x := range 30 {
			odd[y*30+x] = uint8((y*37 + x*11 + (x*y)%5*23) % 256)
		}
	}
	return map[string]goldenImage{
		"fmnist-gray":        {train.Image(0), 1, 28, 28},
		"fmnist-rgb32":       {rgb32, 3, 32, 32},
		"synthetic-rgb":      {small, 3, 9, 13},
		"synthetic-gray-odd": {odd, 1, 15, 30},
	}
}

// opNamed returns the operation torchvision calls name.
func opNamed(name string) (AugmentOp, error) {
	for op := range AugmentOp(numAugmentOps) {
		if op.String() == name {
			return op, nil
		}
	}
	return 0, fmt.Errorf("unknown operation %q", name)
}

// TestTrivialAugmentMatchesTorchvision compares the magnitude table and
// every operation, bin and sign on four images with the CRC-32 checksums of
// torchvision 0.14.1's outputs (testdata/trivialaugment/gen.py).
func TestTrivialAugmentMatchesTorchvision(t *testing.T) {
	f, err := os.Open("testdata/trivialaugment/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imgs := goldenImages(t)
	cases, bad := 0, 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			t.Fatalf("golden.txt:%d: short line", line)
		}
		if fields[0] == "magnitudes" {
			op, err := opNamed(fields[1])
			if err != nil {
				t.Fatalf("golden.txt:%d: %v", line, err)
			}
			for bin, s := range fields[2:] {
				want, err := strconv.ParseFloat(s, 64)
				got := op.WideMagnitude(bin)
				// TranslateX/Y only need the same int() truncation.
				if translate := op == OpTranslateX || op == OpTranslateY; err != nil ||
					(!translate && got != want) || (translate && (int(got) != int(want) || got-want > 4e-6 || want-got > 4e-6)) {
					t.Errorf("golden.txt:%d: %s bin %d magnitude %v, torch %s", line, op, bin, got, s)
				}
			}
			continue
		}
		img, ok := imgs[fields[0]]
		op, err := opNamed(fields[1])
		if !ok || err != nil {
			t.Fatalf("golden.txt:%d: unknown image %q or operation (%v)", line, fields[0], err)
		}
		dst := make([]uint8, len(img.pix))
		for bin, want := range fields[3:] {
			m := 0.0
			if op.hasBins() {
				m = op.WideMagnitude(bin)
			}
			if fields[2] == "-" {
				m = -m
			}
			op.Apply(m, img.pix, dst, img.c, img.h, img.w)
			cases++
			if got := fmt.Sprintf("%08x", crc32.ChecksumIEEE(dst)); got != want {
				bad++
				t.Errorf("golden.txt:%d: %s %s(%v) (bin %d) differs from torchvision", line, fields[0], op, m, bin)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases < 2000 {
		t.Fatalf("golden.txt has only %d cases", cases)
	}
	t.Logf("%d of %d cases differ from torchvision", bad, cases)
}
