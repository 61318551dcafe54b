package data_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/bicyc/bicyc/data"
)

func ExampleAugmentOp_Apply() {
	// A 1x3x4 gray image (CHW), moved right by int(1.5) = 1 pixel and
	// posterized to 2 bits.
	src := []uint8{
		10, 20, 30, 40,
		50, 60, 70, 80,
		90, 100, 110, 120,
	}
	dst := make([]uint8, len(src))
	data.OpTranslateX.Apply(1.5, src, dst, 1, 3, 4)
	fmt.Println(data.OpTranslateX, dst)
	data.OpPosterize.Apply(data.OpPosterize.WideMagnitude(30), src, dst, 1, 3, 4)
	fmt.Println(data.OpPosterize, dst)
	// Output:
	// TranslateX [0 10 20 30 0 50 60 70 0 90 100 110]
	// Posterize [0 0 0 0 0 0 64 64 64 64 64 64]
}

func ExampleTrivialAugmentWide() {
	// Each call draws one operation, a magnitude bin and a sign from rng;
	// the same seed gives the same sequence.
	rng := rand.New(rand.NewPCG(1, 2))
	img := make([]uint8, 3*32*32)
	for range 4 {
		op, m := data.TrivialAugmentWide(rng, img, img, 3, 32, 32)
		fmt.Printf("%s %.4g\n", op, m)
	}
	// Output:
	// Posterize 4
	// Posterize 3
	// TranslateX -1.067
	// Brightness 0.132
}
