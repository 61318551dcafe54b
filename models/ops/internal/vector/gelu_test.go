package vector

import "testing"

func TestGELURejectsMisuse(t *testing.T) {
	var c GELUConstants
	for i, call := range []func(){
		func() { GELU(make([]float32, 3), nil, make([]float32, 3), &c) },
		func() { GELU(make([]float32, 4), nil, make([]float32, 8), &c) },
		func() { GELU(make([]float32, 8), make([]float32, 4), make([]float32, 8), &c) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("case %d: no panic", i)
				}
			}()
			call()
		}()
	}
}
