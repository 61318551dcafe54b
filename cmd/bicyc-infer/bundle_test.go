package main

import (
	"image"
	"os"
	"testing"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel/small"
)

// The command's tests run a real exported model (package testmodel): a
// random convnet over Fashion-MNIST with prototypes of three classes.
func TestMain(m *testing.M) {
	code := m.Run()
	small.Cleanup()
	os.Exit(code)
}

// testModel returns the model directory and the Fashion-MNIST test set.
func testModel(t testing.TB) (string, *data.Dataset) {
	t.Helper()
	return small.Get(t)
}

func fashionImage(d *data.Dataset, i int) image.Image { return small.FashionImage(d, i) }

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	return small.EncodePNG(t, img)
}

func equalResults(a, b infer.Result) bool { return small.EqualResults(a, b) }
