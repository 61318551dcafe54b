package main

import (
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/durable"
)

// seedData is what one seed reads: Fashion-MNIST, and where to put files.
type seedData struct {
	train, test *data.Dataset
	seed        int
	dir         string
}

// folderName is a class name usable as a folder name.
func folderName(class int) string {
	return strings.ReplaceAll(data.FashionMNISTClasses[class], "/", "-")
}

// writeClasses writes up to limit images (0: all) of each class of d as PNG
// files into root/<class>/, in an order shuffled with rng when it is not
// nil (dataset order otherwise).
func writeClasses(d *data.Dataset, classes []int, limit int, rng *rand.Rand, root string) error {
	for _, c := range classes {
		idx := d.Subset([]int{c})
		if rng != nil {
			rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		}
		if limit > 0 {
			idx = idx[:min(limit, len(idx))]
		}
		dir := filepath.Join(root, folderName(c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, i := range idx {
			if err := writePNG(filepath.Join(dir, fmt.Sprintf("%05d.png", i)), d, i); err != nil {
				return err
			}
		}
	}
	return nil
}

func writePNG(path string, d *data.Dataset, i int) error {
	img := &image.Gray{Pix: d.Image(i), Stride: d.Width, Rect: image.Rect(0, 0, d.Width, d.Height)}
	var buf strings.Builder
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	return durable.WriteFile(path, []byte(buf.String()))
}

// layout names the folders of one seed.
type layout struct {
	data        string // train/ and test/ of the eight known classes
	unknownTest string // test images of the two unknown classes
	run, model  string
}

func (l layout) add(n int) string {
	return filepath.Join(filepath.Dir(l.data), fmt.Sprintf("add%d", n))
}
func (l layout) added(n int) string {
	return filepath.Join(filepath.Dir(l.data), fmt.Sprintf("model-add%d", n))
}
func (l layout) learnRun(n int) string {
	return filepath.Join(filepath.Dir(l.data), fmt.Sprintf("run-learn%d", n))
}
func (l layout) learnt(n int) string {
	return filepath.Join(filepath.Dir(l.data), fmt.Sprintf("model-learn%d", n))
}

// seedLayout is the layout of the seed folder dir.
func seedLayout(dir string) layout {
	return layout{data: filepath.Join(dir, "data"), unknownTest: filepath.Join(dir, "unknown-test"),
		run: filepath.Join(dir, "run"), model: filepath.Join(dir, "model")}
}

// writeSeedData writes every folder a seed needs: the known classes' train
// and test images (at most trainLimit and testLimit per class, 0: all),
// the unknown classes' test images, and, per n in adds, n training images
// of each unknown class drawn with the seed (the same images for
// add-classes and learn; the first n of one shuffle, so the sets nest).
func writeSeedData(s seedData, known, unknown []int, trainLimit, testLimit int, adds []int) (layout, error) {
	l := seedLayout(s.dir)
	err := writeClasses(s.train, known, trainLimit, nil, filepath.Join(l.data, "train"))
	if err == nil {
		err = writeClasses(s.test, known, testLimit, nil, filepath.Join(l.data, "test"))
	}
	if err == nil {
		err = writeClasses(s.test, unknown, testLimit, nil, l.unknownTest)
	}
	for _, n := range adds {
		if err == nil {
			err = writeClasses(s.train, unknown, n, rand.New(rand.NewPCG(uint64(s.seed), 99)), l.add(n))
		}
	}
	return l, err
}
