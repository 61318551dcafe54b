package infer

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestUncalibratedModel: a model without calibration has no confidence and
// no unknown unless a threshold is set, and refuses an acceptance rate.
func TestUncalibratedModel(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	img := fashionImage(f.test, heldOut(f, 1)[0])
	r, err := c.Classify(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	if c.Calibrated() || r.Confidence != 0 || r.Unknown || r.Predictions[0].Probability != 0 {
		t.Fatalf("uncalibrated result %+v", r)
	}
	// Without calibration the unknown score is the nearest distance.
	if math.Abs(r.UnknownScore-float64(r.Predictions[0].Distance)) > 1e-4 {
		t.Errorf("unknown score %v, nearest distance %v", r.UnknownScore, r.Predictions[0].Distance)
	}
	strict := openCPU(t, f.twoTasks, WithUnknownThreshold(r.UnknownScore/2))
	if r, err := strict.Classify(context.Background(), img); err != nil || !r.Unknown {
		t.Errorf("threshold below the score: %+v, %v", r, err)
	}
	if th, rate := strict.UnknownThreshold(); th != r.UnknownScore/2 || rate != 0 {
		t.Errorf("UnknownThreshold() = %v, %v", th, rate)
	}
	_, err = Open(context.Background(), f.twoTasks, WithProvider(ProviderCPU), WithLog(nil), WithAcceptRate(0.9))
	if !errors.Is(err, ErrNotCalibrated) {
		t.Errorf("acceptance rate on an uncalibrated model: %v", err)
	}
	for i, opts := range [][]Option{{WithAcceptRate(1.5)}, {WithUnknownThreshold(-1)}, {WithAcceptRate(0.9), WithUnknownThreshold(2)}} {
		if _, err := Open(context.Background(), f.twoTasks, append(opts, WithProvider(ProviderCPU))...); err == nil {
			t.Errorf("case %d: invalid options accepted", i)
		}
	}
}
