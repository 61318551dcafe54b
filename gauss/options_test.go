package gauss

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestClassifierOptionsValidate: every option out of its range, NaN and
// ±Inf included, is named by its key and wraps ErrOptions; the defaults and
// the edges of each range pass.
func TestClassifierOptionsValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for i, c := range []struct {
		edit func(*ClassifierOptions)
		key  string // "" when valid
	}{
		{func(o *ClassifierOptions) {}, ""},
		{func(o *ClassifierOptions) { o.Shrink, o.TopK, o.PoolCov, o.AgeBias = 0, 0, 1, -2 }, ""},
		{func(o *ClassifierOptions) { o.Shrink = -1 }, "shrink"},
		{func(o *ClassifierOptions) { o.Shrink = nan }, "shrink"},
		{func(o *ClassifierOptions) { o.Shrink = inf }, "shrink"},
		{func(o *ClassifierOptions) { o.TopK = -1 }, "top_k"},
		{func(o *ClassifierOptions) { o.OffDiagShrink = nan }, "off_diag_shrink"},
		{func(o *ClassifierOptions) { o.OffDiagShrink = -inf }, "off_diag_shrink"},
		{func(o *ClassifierOptions) { o.AgeShrink = inf }, "age_shrink"},
		{func(o *ClassifierOptions) { o.AgeShrink = -0.5 }, "age_shrink"},
		{func(o *ClassifierOptions) { o.PoolCov = 1.5 }, "pool_cov"},
		{func(o *ClassifierOptions) { o.PoolCov = nan }, "pool_cov"},
		{func(o *ClassifierOptions) { o.AgeBias = -inf }, "age_bias"},
		{func(o *ClassifierOptions) { o.AgeBias = nan }, "age_bias"},
		{func(o *ClassifierOptions) { o.Shortlist = 0 }, ""},
		{func(o *ClassifierOptions) { o.Shortlist = 1 }, ""},
		{func(o *ClassifierOptions) { o.Shortlist = -0.1 }, "shortlist"},
		{func(o *ClassifierOptions) { o.Shortlist = 1.5 }, "shortlist"},
		{func(o *ClassifierOptions) { o.Shortlist = nan }, "shortlist"},
		{func(o *ClassifierOptions) { o.Head = HeadGaussian }, ""},
		{func(o *ClassifierOptions) { o.Head = HeadSoftmax }, ""},
		{func(o *ClassifierOptions) { o.Head = "linear" }, "head"},
		{func(o *ClassifierOptions) { o.Head, o.FullGaussian = HeadSoftmax, true }, "full_gaussian"},
		{func(o *ClassifierOptions) { o.Head, o.GaussianWeight = HeadSoftmax, 10 }, ""},
		{func(o *ClassifierOptions) { o.Head, o.GaussianWeight = HeadSoftmax, -1 }, "gaussian_weight"},
		{func(o *ClassifierOptions) { o.Head, o.GaussianWeight = HeadSoftmax, nan }, "gaussian_weight"},
		{func(o *ClassifierOptions) { o.Head, o.GaussianWeight = HeadSoftmax, inf }, "gaussian_weight"},
		{func(o *ClassifierOptions) { o.GaussianWeight = 1 }, "gaussian_weight"},
		{func(o *ClassifierOptions) { o.Head, o.GaussianWeight = HeadGaussian, 0.5 }, "gaussian_weight"},
	} {
		o := DefaultClassifierOptions()
		c.edit(&o)
		err := o.Validate()
		if c.key == "" {
			if err != nil {
				t.Errorf("case %d: %v", i, err)
			}
			continue
		}
		problems := o.Problems()
		if len(problems) != 1 || problems[0].Key != c.key {
			t.Errorf("case %d: problems %v, want one for %s", i, problems, c.key)
		}
		if !errors.Is(err, ErrOptions) || !strings.HasPrefix(err.Error(), c.key+" ") {
			t.Errorf("case %d: error %v, want ErrOptions naming %s", i, err, c.key)
		}
		if _, err := NewClassifier([]Gaussian{diagGaussian([]float64{0, 1}, 1, 1)}, nil, o); !errors.Is(err, ErrOptions) {
			t.Errorf("case %d: NewClassifier error %v, want ErrOptions", i, err)
		}
	}
}

// TestShortlistSize: how many classes a model scores exactly, by share,
// class count and test-time flip.
func TestShortlistSize(t *testing.T) {
	for _, c := range []struct {
		share    float64
		flip     bool
		k, wantN int
	}{
		{DefaultShortlist, false, 10, 0},
		{DefaultShortlist, false, ShortlistMinClasses - 1, 0},
		{DefaultShortlist, false, ShortlistMinClasses, ShortlistMinSize},
		{DefaultShortlist, false, 5000, ShortlistMinSize},
		{DefaultShortlist, false, 20000, 500},
		{DefaultShortlist, false, 20001, 501},
		{DefaultShortlist, true, 5000, 0},
		{0, false, 5000, 0},
		{1, false, 5000, 5000},
		{0.001, false, 1000, ShortlistMinSize},
	} {
		o := DefaultClassifierOptions()
		o.Shortlist, o.TestFlip = c.share, c.flip
		if got := o.ShortlistSize(c.k); got != c.wantN {
			t.Errorf("share %v, flip %v, %d classes: %d scored exactly, want %d", c.share, c.flip, c.k, got, c.wantN)
		}
	}
}

// TestValidateAcceptRate: the range (0, 1], NaN and ±Inf refused.
func TestValidateAcceptRate(t *testing.T) {
	for i, c := range []struct {
		rate float64
		ok   bool
	}{
		{DefaultAcceptRate, true}, {1, true}, {1e-9, true},
		{0, false}, {-0.1, false}, {1.0000001, false}, {math.NaN(), false}, {math.Inf(1), false}, {math.Inf(-1), false},
	} {
		err := ValidateAcceptRate(c.rate)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrOptions)) {
			t.Errorf("case %d: rate %v: error %v, want ok %v", i, c.rate, err, c.ok)
		}
	}
}

// TestWithAges: ages are kept only where an option reads them, and copied.
func TestWithAges(t *testing.T) {
	ages := []int{2, 0}
	if o := DefaultClassifierOptions().WithAges(ages); o.Ages != nil {
		t.Errorf("ages %v without an age option", o.Ages)
	}
	o := ClassifierOptions{AgeBias: -1}.WithAges(ages)
	ages[0] = 9
	if len(o.Ages) != 2 || o.Ages[0] != 2 {
		t.Errorf("ages %v, want a copy of [2 0]", o.Ages)
	}
}

// TestClassifierOptionsJSON: the options read back as written (manifest
// keys), read the field names a run's stream.json used for them before
// they had one definition, and refuse unknown keys.
func TestClassifierOptionsJSON(t *testing.T) {
	want := ClassifierOptions{Shrink: 2, Normalize: true, FullGaussian: true, TopK: 4, OffDiagShrink: 0.5,
		AgeShrink: 0.25, PoolCov: 0.3, AgeBias: -1, TestFlip: true}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"full_gaussian":true`) || strings.Contains(string(b), "Ages") {
		t.Errorf("encoded %s", b)
	}
	old := `{"Shrink":2,"Normalize":true,"FullGaussian":true,"TopK":4,"OffDiagShrink":0.5,"AgeShrink":0.25,"PoolCov":0.3,"AgeBias":-1,"TestFlip":true}`
	for i, in := range []string{string(b), old} {
		var got ClassifierOptions
		if err := json.Unmarshal([]byte(in), &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("case %d: %s read as %+v, %v", i, in, got, err)
		}
	}
	var got ClassifierOptions
	if err := json.Unmarshal([]byte(`{"shrink":1,"shrinkage":2}`), &got); err == nil {
		t.Error("an unknown key was accepted")
	}
}
