package config

import (
	"strings"
	"testing"
)

// TestValidatePhotoKeys: each bad photo setting is named by its key; a
// center-crop run with random resized crops is valid.
func TestValidatePhotoKeys(t *testing.T) {
	good := Default()
	good.Data.ResizeMode, good.Data.RandomResizedCrop, good.Data.CropPadding = "center-crop", true, 0
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		edit func(d *Data)
		key  string
	}{
		{func(d *Data) { d.ResizeMode = "letterbox" }, "data.resize_mode"},
		{func(d *Data) { d.CenterCropRatio = 0 }, "data.center_crop_ratio"},
		{func(d *Data) { d.CenterCropRatio = 1.2 }, "data.center_crop_ratio"},
		{func(d *Data) { d.LoadSize = -1 }, "data.load_size"},
		{func(d *Data) { d.CropPadding = 4 }, "data.random_resized_crop"},
		{func(d *Data) { d.ResizedCropScale = []float64{0.5, 0.1} }, "data.resized_crop_scale"},
		{func(d *Data) { d.ResizedCropScale = []float64{0.5} }, "data.resized_crop_scale"},
		{func(d *Data) { d.ResizedCropRatio = []float64{0, 1} }, "data.resized_crop_ratio"},
	} {
		cfg := good
		cfg.Data.ResizedCropScale = append([]float64(nil), good.Data.ResizedCropScale...)
		c.edit(&cfg.Data)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.key+":") {
			t.Errorf("case %d: got %v, want an error naming %s", i, err, c.key)
		}
	}
}

// TestReadRunBeforePhotoKeys: a run's config.yaml written before the photo
// keys existed reads back as the default (squash, no random resized crop),
// which is what such a run trained with.
func TestReadRunBeforePhotoKeys(t *testing.T) {
	c := readRunWithout(t, "data.resize_mode", "data.center_crop_ratio", "data.load_size", "data.random_resized_crop",
		"data.resized_crop_scale", "data.resized_crop_ratio")
	if d := Diff(Default(), c); len(d) != 0 {
		t.Errorf("old run read with changes %v", d)
	}
}
