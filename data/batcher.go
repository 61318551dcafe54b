package data

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/bicyc/bicyc/imaging"
)

// BatchOptions configure a Batcher.
type BatchOptions struct {
	// BatchSize is the number of images per batch, >= 1 (the authors use 256;
	// docs/method.md, "Optimisation").
	BatchSize int
	// Shuffle draws a new order of the images every epoch; otherwise
	// batches follow the given indices.
	Shuffle bool
	// DropLast skips a final batch smaller than BatchSize (docs/method.md,
	// "Optimisation": training drops it).
	DropLast bool
	// Seed, with the epoch number, determines all randomness.
	Seed int64
	// Augment is applied to each image before normalisation.
	Augment Augment
	// Preprocess supplies the normalisation (Mean, Std); its Channels,
	// Height and Width must equal the dataset's.
	Preprocess imaging.Preprocess
}

// Batcher streams images of a Dataset in mini-batches of float32 NCHW
// tensors normalised by imaging.Preprocess.Normalize, with their labels.
//
// The order of an epoch and its augmentations depend only on (Seed, epoch)
// and the indices, never on earlier epochs, so a run resumed at epoch e
// calls Epoch(e) and gets the batches the uninterrupted run would have had.
// Filling a batch allocates nothing, except the resampling buffers of a
// resized crop. A Batcher reads the Dataset without
// modifying it; it is not safe for concurrent use.
type Batcher struct {
	ds      *Dataset
	indices []int
	opts    BatchOptions
	norm    imaging.Normalizer
	scratch []uint8 // one augmented image

	order []int // this epoch's image order
	pos   int   // next position in order
	last  int   // position in order of the last batch Next returned
	aug   *rand.Rand
	view2 *rand.Rand // augmentations of SecondView, made on its first call in an epoch
	epoch int
}

// Randomness streams derived from (Seed, epoch), kept apart so that turning
// augmentation on or off does not change the shuffle.
const (
	streamShuffle = 1
	streamAugment = 2
	streamView2   = 3
)

// NewBatcher returns a Batcher over the images of ds at indices (nil means
// all images, in dataset order), positioned at the start of epoch 0. It
// copies indices. It panics on programmer errors: BatchSize < 1, an invalid
// Preprocess or one whose size differs from ds, a negative CropPadding or
// one combined with ResizedCrop, an invalid ResizedCrop, Photos that do not
// match ds, or an index out of range. With ResizedCrop, crops are cut from
// ds.Photos when ds has them (load resolution), else from ds's images.
func NewBatcher(ds *Dataset, indices []int, opts BatchOptions) *Batcher {
	if opts.BatchSize < 1 {
		panic(fmt.Sprintf("data: NewBatcher: batch size %d, want >= 1", opts.BatchSize))
	}
	p := opts.Preprocess
	if err := p.Validate(); err != nil {
		panic("data: NewBatcher: " + err.Error())
	}
	if p.Channels != ds.Channels || p.Height != ds.Height || p.Width != ds.Width {
		panic(fmt.Sprintf("data: NewBatcher: preprocessing is %dx%dx%d, dataset %s is %dx%dx%d", p.Channels, p.Height, p.Width, ds.Name, ds.Channels, ds.Height, ds.Width))
	}
	if a := opts.Augment; a.CropPadding < 0 || (a.CropPadding > 0 && a.ResizedCrop.Enabled()) || a.ResizedCrop.Validate() != nil {
		panic(fmt.Sprintf("data: NewBatcher: crop padding %d with resized crop %+v: want padding >= 0, a valid resized crop, not both", a.CropPadding, a.ResizedCrop))
	}
	if ds.Photos != nil && (ds.Photos.Len() != ds.Len() || ds.Photos.Channels != ds.Channels) {
		panic(fmt.Sprintf("data: NewBatcher: dataset %s has %d images of %d channels, its photos %d of %d", ds.Name, ds.Len(), ds.Channels, ds.Photos.Len(), ds.Photos.Channels))
	}
	if indices == nil {
		indices = make([]int, ds.Len())
		for i := range indices {
			indices[i] = i
		}
	} else {
		for _, i := range indices {
			if i < 0 || i >= ds.Len() {
				panic(fmt.Sprintf("data: NewBatcher: index %d out of range [0, %d)", i, ds.Len()))
			}
		}
		indices = append([]int(nil), indices...)
	}
	b := &Batcher{
		ds:      ds,
		indices: indices,
		opts:    opts,
		norm:    p.Normalizer(),
		scratch: make([]uint8, ds.ImageSize()),
		order:   make([]int, len(indices)),
	}
	b.Epoch(0)
	return b
}

// epochRand returns the generator of one randomness stream of an epoch.
func (b *Batcher) epochRand(epoch, stream int) *rand.Rand {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[0:], uint64(b.opts.Seed))
	binary.LittleEndian.PutUint64(seed[8:], uint64(epoch))
	binary.LittleEndian.PutUint64(seed[16:], uint64(stream))
	return rand.New(rand.NewChaCha8(seed))
}

// Epoch starts epoch epoch: it sets the image order (shuffled from
// (Seed, epoch) when Shuffle is set) and the augmentation randomness, and
// rewinds to the first batch.
func (b *Batcher) Epoch(epoch int) {
	copy(b.order, b.indices)
	if b.opts.Shuffle {
		rng := b.epochRand(epoch, streamShuffle)
		rng.Shuffle(len(b.order), func(i, j int) { b.order[i], b.order[j] = b.order[j], b.order[i] })
	}
	b.aug = b.epochRand(epoch, streamAugment)
	b.view2, b.epoch = nil, epoch
	b.pos, b.last = 0, 0
}

// Len returns the number of images per epoch (including a dropped tail).
func (b *Batcher) Len() int { return len(b.indices) }

// NumBatches returns the number of batches per epoch: Len()/BatchSize
// rounded down with DropLast, up without.
func (b *Batcher) NumBatches() int {
	if b.opts.DropLast {
		return len(b.indices) / b.opts.BatchSize
	}
	return (len(b.indices) + b.opts.BatchSize - 1) / b.opts.BatchSize
}

// Next fills the next batch: n images, augmented and normalised, into
// x[:n*C*H*W] (NCHW) and their dataset labels into labels[:n]; the rest of x
// and labels is left as it was. n is BatchSize except for a short last
// batch (never returned with DropLast). ok is false, with n = 0, once the
// epoch is exhausted. It panics if x or labels are too short for n images.
func (b *Batcher) Next(x []float32, labels []int) (n int, ok bool) {
	n = min(b.opts.BatchSize, len(b.order)-b.pos)
	if n <= 0 || (b.opts.DropLast && n < b.opts.BatchSize) {
		b.pos = len(b.order)
		b.last = b.pos
		return 0, false
	}
	size := b.ds.ImageSize()
	if len(x) < n*size || len(labels) < n {
		panic(fmt.Sprintf("data: Batcher.Next: batch of %d images needs %d floats and %d labels, got %d and %d", n, n*size, n, len(x), len(labels)))
	}
	b.fill(b.aug, b.order[b.pos:b.pos+n], x, labels)
	b.last = b.pos
	b.pos += n
	return n, true
}

// fill writes the images at indices, augmented from rng and normalised, into
// x, and their labels into labels unless it is nil.
func (b *Batcher) fill(rng *rand.Rand, indices []int, x []float32, labels []int) {
	aug := b.opts.Augment
	c, h, w := b.ds.Channels, b.ds.Height, b.ds.Width
	size := b.ds.ImageSize()
	for j, idx := range indices {
		img := b.ds.Image(idx)
		if aug.Enabled() {
			src, sh, sw := img, h, w
			if aug.ResizedCrop.Enabled() && b.ds.Photos != nil {
				src, sw, sh = b.ds.Photos.Image(idx)
			}
			aug.ApplyPhoto(rng, src, sh, sw, b.scratch, c, h, w)
			img = b.scratch
		}
		b.norm.Apply(img, x[j*size:(j+1)*size])
		if labels != nil {
			labels[j] = b.ds.Labels[idx]
		}
	}
}

// SecondView fills x[:n*C*H*W] with a second augmentation of the n images
// Next returned last (a contrastive objective's second view), drawn from a
// randomness stream of its own, so the epoch's order and first views are
// those of a Batcher that never calls it. Without augmentation the second
// view equals the first. Its generator is made on the first call of an
// epoch; filling allocates nothing after that. It panics if x is too short
// or no batch was returned in this epoch.
func (b *Batcher) SecondView(x []float32) {
	n := b.pos - b.last
	size := b.ds.ImageSize()
	if n <= 0 || len(x) < n*size {
		panic(fmt.Sprintf("data: Batcher.SecondView: last batch of %d images, %d floats (want %d)", n, len(x), n*size))
	}
	if b.view2 == nil {
		b.view2 = b.epochRand(b.epoch, streamView2)
	}
	b.fill(b.view2, b.order[b.last:b.pos], x, nil)
}
