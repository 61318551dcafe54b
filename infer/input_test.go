package infer

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"reflect"
	"strings"
	"testing"
)

// TestClassifyInputs checks that images prepared one by one (Prepare,
// PrepareReader) and classified together give exactly ClassifyBatch's
// results, and that inputs not made by Prepare are refused by index.
func TestClassifyInputs(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	idx := heldOut(f, 4)
	imgs := make([]image.Image, len(idx))
	inputs := make([]Input, len(idx))
	for i, j := range idx {
		imgs[i] = fashionImage(f.test, j)
		var err error
		if i%2 == 0 {
			inputs[i], err = c.Prepare(imgs[i])
		} else {
			var b bytes.Buffer
			if err := png.Encode(&b, imgs[i]); err != nil {
				t.Fatal(err)
			}
			inputs[i], err = c.PrepareReader(&b)
		}
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
	}
	want, err := c.ClassifyBatch(context.Background(), imgs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ClassifyInputs(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ClassifyInputs %+v, ClassifyBatch %+v", got, want)
	}
	if _, err := c.ClassifyInputs(context.Background(), []Input{inputs[0], {}}); err == nil || !strings.Contains(err.Error(), "input 1 has 0 values") {
		t.Errorf("zero Input: %v", err)
	}
	if _, err := c.Prepare(nil); err == nil {
		t.Error("Prepare(nil) succeeded")
	}
}
