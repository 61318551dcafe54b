package ops

import "testing"

func TestScratchPoolReusesAndBounds(t *testing.T) {
	var p scratchPool[float32]
	a := p.get(100)
	b := p.get(10)
	if len(a) != 100 || len(b) != 10 {
		t.Fatalf("lengths %d, %d, want 100, 10", len(a), len(b))
	}
	p.put(a, b)
	if c := p.get(50); cap(c) != 100 || len(c) != 50 {
		t.Errorf("get(50) with free buffers of 10 and 100: len %d cap %d, want the 100 one", len(c), cap(c))
	} else {
		p.put(c)
	}
	if c := p.get(5); cap(c) != 10 {
		t.Errorf("get(5): cap %d, want the smallest free buffer (10)", cap(c))
	} else {
		p.put(c)
	}
	// No free buffer fits: the largest too-small one is dropped, so the pool keeps at most two buffers, the
	// most ever lent at once.
	c := p.get(1000)
	p.put(c)
	if len(p.free) != 2 {
		t.Errorf("%d free buffers after get(1000), want 2", len(p.free))
	}
	if d := p.get(1000); cap(d) != 1000 {
		t.Errorf("get(1000) again: cap %d, want the returned 1000", cap(d))
	}
}
