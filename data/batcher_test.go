package data

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/imaging"
)

// indexedDataset returns n 1x4x4 images whose label is their index, so a
// batch's labels say which images it holds.
func indexedDataset(n int) *Dataset {
	ds := &Dataset{Name: "indexed", Channels: 1, Height: 4, Width: 4, Pixels: make([]uint8, n*16), Labels: make([]int, n), ClassNames: numberedClassNames(n)}
	for i := range n {
		ds.Labels[i] = i
		for j := range 16 {
			ds.Pixels[i*16+j] = uint8(i + 3*j)
		}
	}
	return ds
}

var grayUnit = imaging.Preprocess{Channels: 1, Height: 4, Width: 4, Mean: []float32{0.5}, Std: []float32{0.25}}

// epochBatches returns the labels of each batch of one epoch, and the
// batch data flattened.
func epochBatches(b *Batcher, epoch, size int) (labels [][]int, x []float32) {
	b.Epoch(epoch)
	buf := make([]float32, b.opts.BatchSize*size)
	lbl := make([]int, b.opts.BatchSize)
	for {
		n, ok := b.Next(buf, lbl)
		if !ok {
			return labels, x
		}
		labels = append(labels, slices.Clone(lbl[:n]))
		x = append(x, buf[:n*size]...)
	}
}

func TestBatcherEpochs(t *testing.T) {
	ds := indexedDataset(10)
	for i, c := range []struct {
		shuffle, dropLast bool
		batches           int
		last              int
	}{{true, true, 2, 4}, {true, false, 3, 2}, {false, false, 3, 2}, {false, true, 2, 4}} {
		b := NewBatcher(ds, nil, BatchOptions{BatchSize: 4, Shuffle: c.shuffle, DropLast: c.dropLast, Seed: 5, Preprocess: grayUnit})
		if b.NumBatches() != c.batches || b.Len() != 10 {
			t.Errorf("case %d: NumBatches %d, want %d", i, b.NumBatches(), c.batches)
		}
		labels, _ := epochBatches(b, 0, 16)
		if len(labels) != c.batches || len(labels[len(labels)-1]) != c.last {
			t.Errorf("case %d: %d batches, last of %d; want %d, last of %d", i, len(labels), len(labels[len(labels)-1]), c.batches, c.last)
		}
		all := slices.Concat(labels...)
		if !c.dropLast {
			// Every image exactly once per epoch.
			if sorted := slices.Sorted(slices.Values(all)); !slices.Equal(sorted, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
				t.Errorf("case %d: epoch holds %v", i, all)
			}
		} else if len(all) != 8 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 8 {
			t.Errorf("case %d: drop-last epoch holds %v", i, all)
		}
		if c.shuffle == slices.IsSorted(all) && len(all) == 10 {
			t.Errorf("case %d: shuffle %v but order %v", i, c.shuffle, all)
		}
		// After the epoch, Next keeps reporting its end.
		if n, ok := b.Next(make([]float32, 64), make([]int, 4)); ok || n != 0 {
			t.Errorf("case %d: Next after the end gave %d, %v", i, n, ok)
		}
	}
}

func TestBatcherValuesAndIndices(t *testing.T) {
	ds := indexedDataset(20)
	indices := []int{19, 3, 7, 11, 2}
	b := NewBatcher(ds, indices, BatchOptions{BatchSize: 2, Preprocess: grayUnit})
	indices[0] = 0 // the batcher owns a copy
	labels, x := epochBatches(b, 0, 16)
	if got := slices.Concat(labels...); !slices.Equal(got, []int{19, 3, 7, 11, 2}) {
		t.Fatalf("unshuffled order %v", got)
	}
	want := make([]float32, 16)
	grayUnit.Normalize(ds.Image(7), want)
	if !slices.Equal(x[2*16:3*16], want) {
		t.Errorf("image 7 normalised as %v, want %v", x[32:48], want)
	}
}

// TestBatcherReproducible checks that batches depend only on (seed, epoch):
// the same epoch twice, or on a fresh batcher (a resumed run), is
// identical; other epochs and seeds differ; augmentation does not change
// the order.
func TestBatcherReproducible(t *testing.T) {
	train, _ := loadFashionMNIST(t)
	p := kindPreprocess(KindFashionMNIST, train.Channels, train.Height, train.Width)
	idx := train.Subset([]int{0, 9})
	opts := BatchOptions{BatchSize: 256, Shuffle: true, DropLast: true, Seed: 42, Preprocess: p, Augment: Augment{CropPadding: 2, HorizontalFlip: true}}
	run := NewBatcher(train, idx, opts)
	if run.NumBatches() != 12000/256 {
		t.Fatalf("NumBatches %d", run.NumBatches())
	}
	var labels [3][][]int
	var xs [3][]float32
	for e := range 3 {
		labels[e], xs[e] = epochBatches(run, e, 784)
		if len(labels[e]) != 46 {
			t.Fatalf("epoch %d: %d batches", e, len(labels[e]))
		}
	}
	resumed := NewBatcher(train, idx, opts)
	l2, x2 := epochBatches(resumed, 2, 784)
	if !slices.EqualFunc(l2, labels[2], slices.Equal) || !slices.Equal(x2, xs[2]) {
		t.Error("a fresh batcher at epoch 2 differs from the run's epoch 2")
	}
	l1, x1 := epochBatches(run, 1, 784)
	if !slices.EqualFunc(l1, labels[1], slices.Equal) || !slices.Equal(x1, xs[1]) {
		t.Error("epoch 1 repeated differs")
	}
	if slices.Equal(xs[0], xs[1]) || fmt.Sprint(labels[0]) == fmt.Sprint(labels[1]) {
		t.Error("epochs 0 and 1 are identical")
	}
	other := opts
	other.Seed = 43
	if lo, _ := epochBatches(NewBatcher(train, idx, other), 1, 784); fmt.Sprint(lo) == fmt.Sprint(labels[1]) {
		t.Error("seeds 42 and 43 give the same epoch")
	}
	// The augmentation draws from its own stream: turning it off keeps
	// the order, and then the images are plainly normalised.
	plain := opts
	plain.Augment = Augment{}
	lp, xp := epochBatches(NewBatcher(train, idx, plain), 1, 784)
	if fmt.Sprint(lp) != fmt.Sprint(labels[1]) || slices.Equal(xp, xs[1]) {
		t.Error("augmentation changed the order, or changed nothing")
	}
	// First image of the plain epoch equals Preprocess.Normalize of a
	// dataset image of that class.
	found := false
	for _, i := range idx {
		want := make([]float32, 784)
		p.Normalize(train.Image(i), want)
		if slices.Equal(want, xp[:784]) && train.Labels[i] == lp[0][0] {
			found = true
			break
		}
	}
	if !found {
		t.Error("first plain batch image is no normalised dataset image")
	}
}

func TestBatcherNextAllocatesNothing(t *testing.T) {
	train, _ := loadFashionMNIST(t)
	p := kindPreprocess(KindFashionMNIST, train.Channels, train.Height, train.Width)
	b := NewBatcher(train, nil, BatchOptions{BatchSize: 128, Shuffle: true, Seed: 1, Preprocess: p, Augment: Augment{CropPadding: 4, HorizontalFlip: true}})
	x := make([]float32, 128*784)
	labels := make([]int, 128)
	allocs := testing.AllocsPerRun(20, func() {
		if _, ok := b.Next(x, labels); !ok {
			b.Epoch(1)
		}
	})
	if allocs != 0 {
		t.Errorf("Next allocates %.1f times per batch", allocs)
	}
}

func TestNewBatcherPanics(t *testing.T) {
	ds := indexedDataset(3)
	for i, c := range []struct {
		indices []int
		opts    BatchOptions
	}{
		{nil, BatchOptions{BatchSize: 0, Preprocess: grayUnit}},
		{nil, BatchOptions{BatchSize: 2}},
		{nil, BatchOptions{BatchSize: 2, Preprocess: imaging.Preprocess{Channels: 1, Height: 5, Width: 4, Mean: []float32{0}, Std: []float32{1}}}},
		{[]int{0, 3}, BatchOptions{BatchSize: 2, Preprocess: grayUnit}},
		{nil, BatchOptions{BatchSize: 2, Preprocess: grayUnit, Augment: Augment{CropPadding: -1}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("case %d: no panic", i)
				}
			}()
			NewBatcher(ds, c.indices, c.opts)
		}()
	}
}

// BenchmarkBatcherNext measures one augmented, normalised CIFAR-sized
// batch of 256.
func BenchmarkBatcherNext(b *testing.B) {
	ds := &Dataset{Channels: 3, Height: 32, Width: 32, Pixels: numbered(2000*3, 32, 32), Labels: make([]int, 2000), ClassNames: []string{"a"}}
	p := kindPreprocess(KindCIFAR10, 3, 32, 32)
	bt := NewBatcher(ds, nil, BatchOptions{BatchSize: 256, Shuffle: true, DropLast: true, Preprocess: p, Augment: Augment{CropPadding: 4, HorizontalFlip: true}})
	x := make([]float32, 256*3*32*32)
	labels := make([]int, 256)
	epoch := 0
	for b.Loop() {
		if _, ok := bt.Next(x, labels); !ok {
			epoch++
			bt.Epoch(epoch)
		}
	}
}

// TestBatcherSecondView checks the contrastive second view: the epoch's order, first views and labels are
// those of a batcher that never asks for it, the second views are reproducible from (Seed, epoch), differ
// from the first ones with augmentation and equal them without.
func TestBatcherSecondView(t *testing.T) {
	train, _ := loadFashionMNIST(t)
	p := kindPreprocess(KindFashionMNIST, train.Channels, train.Height, train.Width)
	idx := train.Subset([]int{0, 9})
	opts := BatchOptions{BatchSize: 64, Shuffle: true, DropLast: true, Seed: 7, Preprocess: p, Augment: Augment{CropPadding: 2, HorizontalFlip: true}}
	views := func(opts BatchOptions, epoch int) (labels [][]int, first, second []float32) {
		b := NewBatcher(train, idx, opts)
		b.Epoch(epoch)
		x, x2, lbl := make([]float32, 64*784), make([]float32, 64*784), make([]int, 64)
		for range 5 {
			n, ok := b.Next(x, lbl)
			if !ok {
				t.Fatal("epoch ended early")
			}
			b.SecondView(x2)
			labels = append(labels, slices.Clone(lbl[:n]))
			first, second = append(first, x[:n*784]...), append(second, x2[:n*784]...)
		}
		return labels, first, second
	}
	labels, first, second := views(opts, 1)
	plainLabels, plainFirst := epochBatches(NewBatcher(train, idx, opts), 1, 784)
	if !slices.EqualFunc(labels, plainLabels[:5], slices.Equal) || !slices.Equal(first, plainFirst[:len(first)]) {
		t.Error("asking for second views changed the first views or the order")
	}
	_, _, again := views(opts, 1)
	if !slices.Equal(second, again) {
		t.Error("second views of epoch 1 are not reproducible")
	}
	differ := 0
	for i := 0; i < len(first); i += 784 {
		if !slices.Equal(first[i:i+784], second[i:i+784]) {
			differ++
		}
	}
	if images := len(first) / 784; differ < images*3/4 {
		t.Errorf("only %d of %d second views differ from their first view", differ, images)
	}
	plain := opts
	plain.Augment = Augment{}
	if _, f, s := views(plain, 1); !slices.Equal(f, s) {
		t.Error("without augmentation the second view differs from the first")
	}
	b := NewBatcher(train, idx, opts)
	defer func() {
		if recover() == nil {
			t.Error("SecondView before any batch did not panic")
		}
	}()
	b.SecondView(make([]float32, 64*784))
}
