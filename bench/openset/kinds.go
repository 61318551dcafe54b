package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
)

// Outside images: real photos and graphics nobody here made. Debian's
// libjxl-testdata (scripts/setup.sh installs it) and Go's own image
// testdata.
const libjxlTestdata = "/usr/share/libjxl-testdata"

func goImageTestdata() string { return filepath.Join(runtime.GOROOT(), "src", "image", "testdata") }

// The unknown kinds. Validation kinds choose the default score; test kinds
// are read once, after the choice.
const (
	kindNear         = "near"          // the held-out Fashion-MNIST classes (test only)
	kindShifted      = "shifted"       // known-class images inverted or turned 90 or 180 degrees
	kindFarPhotos    = "far-photos"    // outside photos and graphics
	kindFarSynthetic = "far-synthetic" // noise and blank images
	kindFar          = "far"           // far-photos and far-synthetic together
)

// split is "validation" or "test".
const (
	splitValidation = "validation"
	splitTest       = "test"
)

// scoreKinds is one seed's measurement of every unknown score on every
// kind of unknown image, on both splits.
type scoreKinds struct {
	// Images per split and kind, and the outside files that could not be
	// decoded (skipped).
	Images  map[string]map[string]int `json:"images"`
	Skipped []string                  `json:"skipped_files,omitempty"`
	// Scores[score][split][kind] is the detection of that kind among the
	// split's known images; Accepted[score] the share of known test images
	// the score's calibrated threshold accepts at AcceptRate.
	Scores   map[string]map[string]map[string]detection `json:"scores"`
	Accepted map[string]float64                         `json:"known_accepted"`
	// Rejected[score][kind] is the share of the kind's test images the
	// calibrated threshold answers unknown.
	Rejected map[string]map[string]float64 `json:"unknown_rejected"`
}

// imageSet is a named list of images to score.
type imageSet struct {
	split, kind string
	images      []image.Image
}

// measureKinds scores every unknown score of the model in l on the known
// test images (even positions: validation, odd: test) and on every kind of
// unknown image.
func measureKinds(l layout, seed int, acceptRate float64) (scoreKinds, error) {
	res := scoreKinds{Images: map[string]map[string]int{}, Scores: map[string]map[string]map[string]detection{},
		Accepted: map[string]float64{}, Rejected: map[string]map[string]float64{}}
	c, err := infer.Open(context.Background(), l.model, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil))
	if err != nil {
		return res, err
	}
	defer c.Close()
	sets, skipped, err := imageSets(l, seed)
	if err != nil {
		return res, err
	}
	res.Skipped = skipped
	values := map[[2]string][][]float64{} // {split, kind} -> [image][score]
	for _, s := range sets {
		v, err := unknownScores(c, s.images)
		if err != nil {
			return res, fmt.Errorf("%s %s images: %w", s.split, s.kind, err)
		}
		values[[2]string{s.split, s.kind}] = v
		if res.Images[s.split] == nil {
			res.Images[s.split] = map[string]int{}
		}
		res.Images[s.split][s.kind] = len(v)
	}
	for _, split := range kindSplits {
		values[[2]string{split, kindFar}] = slices.Concat(values[[2]string{split, kindFarPhotos}], values[[2]string{split, kindFarSynthetic}])
		res.Images[split][kindFar] = len(values[[2]string{split, kindFar}])
	}
	if err := saveScores(filepath.Join(filepath.Dir(l.data), "unknown-scores.json"), values); err != nil {
		return res, err
	}
	cal := c.Manifest().Calibration.Gauss()
	for j, u := range gauss.UnknownScores() {
		threshold, err := cal.ThresholdOf(u, acceptRate)
		if err != nil {
			return res, err
		}
		res.addScore(string(u), threshold, scoreColumn(values, j))
	}
	return res, nil
}

// kindSplits are the halves of the known test images (and of the outside
// ones): the validation half to choose on, the test half to report.
var kindSplits = []string{splitValidation, splitTest}

// imageSets reads the known and near-unknown test images of l and the
// outside photos, and makes each split's sets of every kind (the shifted
// and synthetic ones from seed); skipped names the outside files that do
// not decode.
func imageSets(l layout, seed int) (sets []imageSet, skipped []string, err error) {
	known, err := readFolderImages(filepath.Join(l.data, "test"))
	if err != nil {
		return nil, nil, err
	}
	near, err := readFolderImages(l.unknownTest)
	if err != nil {
		return nil, nil, err
	}
	var knownHalf [2][]image.Image
	for i, img := range known {
		knownHalf[i%2] = append(knownHalf[i%2], img)
	}
	photos, skipped, err := outsideImages()
	if err != nil {
		return nil, nil, err
	}
	for h, split := range kindSplits {
		sets = append(sets,
			imageSet{split, "known", knownHalf[h]},
			imageSet{split, kindShifted, shifted(knownHalf[h], seed)},
			imageSet{split, kindFarPhotos, photos[h]},
			imageSet{split, kindFarSynthetic, synthetic(uint64(seed)*2 + uint64(h))})
	}
	return append(sets, imageSet{splitTest, kindNear, near}), skipped, nil
}

// scoreColumn is score j of every image, per {split, kind}.
func scoreColumn(values map[[2]string][][]float64, j int) map[[2]string][]float64 {
	out := map[[2]string][]float64{}
	for key, rows := range values {
		col := make([]float64, len(rows))
		for i, r := range rows {
			col[i] = r[j]
		}
		out[key] = col
	}
	return out
}

// addScore records how well the unknown score name separates the known
// images from each kind of unknown one (per split), and, on the test split,
// the fractions above threshold: unknown ones rejected, known ones not accepted.
func (res *scoreKinds) addScore(name string, threshold float64, scores map[[2]string][]float64) {
	res.Scores[name] = map[string]map[string]detection{}
	res.Rejected[name] = map[string]float64{}
	for _, split := range kindSplits {
		res.Scores[name][split] = map[string]detection{}
		knownScores := scores[[2]string{split, "known"}]
		for _, kind := range []string{kindNear, kindShifted, kindFarPhotos, kindFarSynthetic, kindFar} {
			unknown, ok := scores[[2]string{split, kind}]
			if !ok {
				continue
			}
			res.Scores[name][split][kind] = detect(knownScores, unknown)
			if split == splitTest {
				res.Rejected[name][kind] = fractionAbove(unknown, threshold)
			}
		}
		if split == splitTest {
			res.Accepted[name] = 1 - fractionAbove(knownScores, threshold)
		}
	}
}

// unknownScores returns every score of every image, in batches.
func unknownScores(c *infer.Classifier, imgs []image.Image) ([][]float64, error) {
	var out [][]float64
	for start := 0; start < len(imgs); start += 256 {
		batch := imgs[start:min(start+256, len(imgs))]
		inputs := make([]infer.Input, len(batch))
		for i, img := range batch {
			var err error
			if inputs[i], err = c.Prepare(img); err != nil {
				return nil, err
			}
		}
		v, err := c.UnknownScores(context.Background(), inputs)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// detect is the detection of unknown among known scores (unknown
// positive): AUROC with ties counted half, and the share of unknown scores
// at most the 95th percentile of the known ones (FPR at 95 % TPR).
func detect(known, unknown []float64) detection {
	k := slices.Sorted(slices.Values(known))
	if len(k) == 0 || len(unknown) == 0 {
		return detection{AUROC: math.NaN(), FPR95: math.NaN()}
	}
	cut := k[min(len(k)-1, int(0.95*float64(len(k))))]
	var auc float64
	accepted := 0
	for _, u := range unknown {
		below, _ := slices.BinarySearch(k, u)
		upto := below
		for upto < len(k) && k[upto] == u {
			upto++
		}
		auc += (float64(below) + 0.5*float64(upto-below)) / float64(len(k))
		if u <= cut {
			accepted++
		}
	}
	return detection{AUROC: auc / float64(len(unknown)), FPR95: float64(accepted) / float64(len(unknown))}
}

func fractionAbove(v []float64, threshold float64) float64 {
	n := 0
	for _, x := range v {
		if x > threshold {
			n++
		}
	}
	return float64(n) / float64(len(v))
}

// readFolderImages decodes every image of a folder of class folders.
func readFolderImages(root string) ([]image.Image, error) {
	classes, _, err := author.ReadClassFolders(root)
	if err != nil {
		return nil, err
	}
	var out []image.Image
	for _, class := range classes {
		for _, f := range class.Files {
			img, err := decodeFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		}
	}
	return out, nil
}

func decodeFile(path string) (image.Image, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	img, _, err := imaging.DecodeImage(bytes.NewReader(raw), infer.DefaultMaxPixels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return img, nil
}

// shifted returns the known images under a shift of their distribution:
// one in three inverted, one turned 90 degrees, one turned 180 degrees (which
// class the seed picks for which image).
func shifted(imgs []image.Image, seed int) []image.Image {
	out := make([]image.Image, len(imgs))
	for i, img := range imgs {
		g := toGray(img)
		switch (i + seed) % 3 {
		case 0:
			for j := range g.Pix {
				g.Pix[j] = 255 - g.Pix[j]
			}
			out[i] = g
		case 1:
			out[i] = turn(g, 1)
		default:
			out[i] = turn(g, 2)
		}
	}
	return out
}

func toGray(img image.Image) *image.Gray {
	b := img.Bounds()
	g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			g.Set(x, y, color.GrayModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)))
		}
	}
	return g
}

// turn rotates a square image by quarter turns (counter-clockwise).
func turn(g *image.Gray, quarters int) *image.Gray {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	out := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := g.GrayAt(x, y)
			switch quarters {
			case 1:
				out.SetGray(y, w-1-x, v)
			default:
				out.SetGray(w-1-x, h-1-y, v)
			}
		}
	}
	return out
}

// synthetic returns 100 noise images (uniform, and Gaussian-smoothed
// blobs) and 20 blank ones (uniform gray levels, black and white
// included), drawn from seed.
func synthetic(seed uint64) []image.Image {
	rng := rand.New(rand.NewPCG(seed, 36))
	var out []image.Image
	for i := range 100 {
		g := image.NewGray(image.Rect(0, 0, 28, 28))
		for j := range g.Pix {
			g.Pix[j] = uint8(rng.IntN(256))
		}
		if i%2 == 1 {
			g = blur(g, 1+rng.IntN(3))
		}
		out = append(out, g)
	}
	for i := range 20 {
		level := uint8(i * 255 / 19)
		g := image.NewGray(image.Rect(0, 0, 28, 28))
		for j := range g.Pix {
			g.Pix[j] = level
		}
		out = append(out, g)
	}
	return out
}

// blur box-blurs g with radius r, then stretches it to the full range, so
// the noise has blobs the size of a garment's parts.
func blur(g *image.Gray, r int) *image.Gray {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	out := image.NewGray(g.Rect)
	v := make([]float64, w*h)
	lo, hi := math.Inf(1), math.Inf(-1)
	for y := range h {
		for x := range w {
			var s float64
			n := 0
			for dy := -r; dy <= r; dy++ {
				for dx := -r; dx <= r; dx++ {
					if xx, yy := x+dx, y+dy; xx >= 0 && xx < w && yy >= 0 && yy < h {
						s += float64(g.Pix[yy*w+xx])
						n++
					}
				}
			}
			v[y*w+x] = s / float64(n)
			lo, hi = min(lo, v[y*w+x]), max(hi, v[y*w+x])
		}
	}
	for i, x := range v {
		out.Pix[i] = uint8(255 * (x - lo) / max(hi-lo, 1))
	}
	return out
}

// pictureOf names the picture an outside file shows: its name up to the
// first '.' or '_' in its folder (flower.png.im_q85_420.jpg,
// cvo9xd_keong_macan_srgb8.png in 64px/ and 500px/ alike), or the whole
// folder where one picture's versions have different names (the flower,
// the traffic light's blending frames, the wide-gamut colour tests).
func pictureOf(rel string) string {
	dir := filepath.Dir(rel)
	switch filepath.Base(dir) {
	case "flower", "blending", "wide-gamut-tests":
		return dir
	}
	if strings.HasPrefix(dir, "external/wesaturate") {
		dir = "external/wesaturate"
	}
	base := filepath.Base(rel)
	if i := strings.IndexAny(base, "._"); i > 0 {
		base = base[:i]
	}
	return dir + "/" + base
}

// outsideImages decodes the outside photos and graphics, split into
// validation [0] and test [1] by picture: files of one picture (Go's
// testdata holds one picture in many encodings, named picture.variant.ext;
// libjxl-testdata keeps a picture's versions in one folder) fall in one
// split, chosen by a hash of the picture's name. Files that do not decode
// are skipped and listed.
func outsideImages() (split [2][]image.Image, skipped []string, err error) {
	for _, root := range []string{libjxlTestdata, goImageTestdata()} {
		var files []string
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(p)) {
			case ".png", ".jpg", ".jpeg", ".gif":
				if e.Type().IsRegular() {
					files = append(files, p)
				}
			}
			return nil
		})
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return split, nil, fmt.Errorf("%s: %w (scripts/setup.sh installs Debian's libjxl-testdata)", root, err)
			}
			return split, nil, err
		}
		slices.Sort(files)
		for _, f := range files {
			img, err := decodeFile(f)
			if err != nil {
				skipped = append(skipped, strings.TrimPrefix(f, root+"/"))
				continue
			}
			h := fnv.New32a()
			picture := pictureOf(strings.TrimPrefix(f, root+"/"))
			h.Write([]byte(picture))
			split[h.Sum32()%2] = append(split[h.Sum32()%2], img)
		}
	}
	return split, skipped, nil
}

// saveScores writes every image's scores into the seed's work folder
// (split/kind -> [image][score], scores in gauss.UnknownScores order), so
// other summaries can be computed without scoring again.
func saveScores(path string, values map[[2]string][][]float64) error {
	out := map[string][][]float64{}
	for key, v := range values {
		out[key[0]+"/"+key[1]] = v
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return durable.WriteFile(path, raw)
}
