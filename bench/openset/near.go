package main

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/export/onnxpb"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/train"
)

// The near study (--near, issue 45) reads the runs a former call trained in
// --work with --unknown 3 (or 4) and scores candidate unknown scores on
// them without training: every image's features are computed once per
// seed (cached in the seed's folder, near-features.gob) and every score is
// a function of them.
//
// Sets of one seed: "fit" and "ref" are the two halves (alternate images)
// of the run's validation split, the held-out training images of the known
// classes that the export's calibration reads; "fit" fits what a score
// learns (a rotation probe, per-layer class Gaussians), "ref" gives the
// standardisation and thresholds. The validation and test splits are those
// of measureKinds, with the near unknowns split by class: the last two
// held-out classes are the test's near kind (as in the two-class study),
// the others the validation's near kind, never trained and never read by
// the test.

// nearRecord is what the study keeps of one image.
type nearRecord struct {
	// Scores are the model's gauss.UnknownScores, in that order, as
	// infer computes them; Pred the top class's name and Class the true
	// one ("" for an unknown or a validation-split image).
	Scores      []float64
	Pred, Class string
	// Label is the dataset label of a validation-split image.
	Label int
	// Z and G3 are the features and the pooled last conv stage of the
	// image turned q quarter turns counter-clockwise; G2 the pooled middle
	// stage of the image itself.
	Z, G3 [4][]float32
	G2    []float32
}

// nearFeatures are one seed's records by set name ("fit", "ref",
// "validation/known", "test/near", ...).
type nearFeatures struct {
	Sets       map[string][]nearRecord
	AcceptRate float64
	NearVal    []string // class names of the validation's near kind
	NearTest   []string // and of the test's
}

// The pooled stages the study adds as outputs of the backbone graph.
const (
	outStage2 = "near_gap2" // GlobalAveragePool of relu2 [N,64,1,1]
	outStage3 = "near_gap3" // GlobalAveragePool of relu3 [N,128,1,1]
)

// stagedBackbone is backbone.onnx of a convnet model with the pooled
// outputs of its second and third conv stages added.
func stagedBackbone(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g := m.GetGraph()
	for _, o := range []struct {
		in, out string
		c       int64
	}{{"relu2", outStage2, 64}, {"relu3", outStage3, 128}} {
		found := slices.ContainsFunc(g.Node, func(n *onnxpb.NodeProto) bool { return slices.Contains(n.Output, o.in) })
		if !found {
			return nil, fmt.Errorf("%s: no value %s (the near study reads convnet models)", path, o.in)
		}
		g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("GlobalAveragePool"), Name: proto.String(o.out),
			Input: []string{o.in}, Output: []string{o.out}})
		shape := &onnxpb.TensorShapeProto{}
		for _, d := range []int64{-1, o.c, 1, 1} {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			if d < 0 {
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}
			} else {
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}
			}
			shape.Dim = append(shape.Dim, dim)
		}
		g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: proto.String(o.out),
			Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
				ElemType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Shape: shape}}}})
	}
	return proto.Marshal(&m)
}

// stagedSession runs the staged backbone.
type stagedSession struct {
	s       *ort.DynamicAdvancedSession
	pre     imaging.Preprocess
	featDim int
}

func newStagedSession(model string, m bundle.Manifest) (*stagedSession, error) {
	onnx, err := stagedBackbone(filepath.Join(model, bundle.BackboneFile))
	if err != nil {
		return nil, err
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(onnx, []string{bundle.TensorImage},
		[]string{bundle.TensorFeatures, outStage2, outStage3}, nil)
	if err != nil {
		return nil, err
	}
	return &stagedSession{s: s, pre: m.Preprocess, featDim: m.FeatureDim}, nil
}

func (s *stagedSession) close() { s.s.Destroy() }

// run computes the features and pooled stages of n prepared images x.
func (s *stagedSession) run(x []float32, n int) (z, g2, g3 []float32, err error) {
	c, h, w := s.pre.Channels, s.pre.Height, s.pre.Width
	in, err := ort.NewTensor(ort.NewShape(int64(n), int64(c), int64(h), int64(w)), x)
	if err != nil {
		return nil, nil, nil, err
	}
	defer in.Destroy()
	z, g2, g3 = make([]float32, n*s.featDim), make([]float32, n*64), make([]float32, n*128)
	var outs []ort.Value
	for _, o := range []struct {
		buf  []float32
		dims []int64
	}{{z, []int64{int64(n), int64(s.featDim)}}, {g2, []int64{int64(n), 64, 1, 1}}, {g3, []int64{int64(n), 128, 1, 1}}} {
		t, err := ort.NewTensor(ort.NewShape(o.dims...), o.buf)
		if err != nil {
			return nil, nil, nil, err
		}
		defer t.Destroy()
		outs = append(outs, t)
	}
	if err := s.s.Run([]ort.Value{in}, outs); err != nil {
		return nil, nil, nil, err
	}
	return z, g2, g3, nil
}

// turnInput turns a prepared [C,H,W] square image q quarter turns
// counter-clockwise (as turn does to an image).
func turnInput(x []float32, c, size, q int) []float32 {
	out := slices.Clone(x)
	for range q {
		prev := slices.Clone(out)
		for ch := range c {
			p := prev[ch*size*size : (ch+1)*size*size]
			o := out[ch*size*size : (ch+1)*size*size]
			for y := range size {
				for xx := range size {
					o[(size-1-xx)*size+y] = p[y*size+xx]
				}
			}
		}
	}
	return out
}

// records scores one set of images.
func records(c *infer.Classifier, s *stagedSession, imgs []image.Image, classes []string, labels []int) ([]nearRecord, error) {
	out := make([]nearRecord, 0, len(imgs))
	pre := s.pre
	size := pre.ImageSize()
	for start := 0; start < len(imgs); start += 256 {
		batch := imgs[start:min(start+256, len(imgs))]
		n := len(batch)
		inputs := make([]infer.Input, n)
		x := make([]float32, 4*n*size)
		for i, img := range batch {
			var err error
			if inputs[i], err = c.Prepare(img); err != nil {
				return nil, err
			}
			p := pre.Image(img)
			for q := range 4 {
				copy(x[(q*n+i)*size:], turnInput(p, pre.Channels, pre.Width, q))
			}
		}
		sc, err := c.UnknownScores(context.Background(), inputs)
		if err != nil {
			return nil, err
		}
		res, err := c.ClassifyInputs(context.Background(), inputs)
		if err != nil {
			return nil, err
		}
		z, g2, g3, err := s.run(x, 4*n)
		if err != nil {
			return nil, err
		}
		for i := range n {
			r := nearRecord{Scores: sc[i], Pred: res[i].Predictions[0].Name}
			if classes != nil {
				r.Class = classes[start+i]
			}
			if labels != nil {
				r.Label = labels[start+i]
			}
			for q := range 4 {
				row := q*n + i
				r.Z[q] = slices.Clone(z[row*s.featDim : (row+1)*s.featDim])
				r.G3[q] = slices.Clone(g3[row*128 : (row+1)*128])
			}
			r.G2 = slices.Clone(g2[i*64 : (i+1)*64])
			out = append(out, r)
		}
	}
	return out, nil
}

// folderImages decodes the images of the named class folders under root
// (every one when names is nil) with each image's class name.
func folderImages(root string, names []string) ([]image.Image, []string, error) {
	classes, _, err := author.ReadClassFolders(root)
	if err != nil {
		return nil, nil, err
	}
	var imgs []image.Image
	var cls []string
	for _, class := range classes {
		if names != nil && !slices.Contains(names, class.Name) {
			continue
		}
		for _, f := range class.Files {
			img, err := decodeFile(f)
			if err != nil {
				return nil, nil, err
			}
			imgs = append(imgs, img)
			cls = append(cls, class.Name)
		}
	}
	return imgs, cls, nil
}

// nearFeaturesOf computes (or reads from the seed's cache) the records of
// every set of one seed.
func nearFeaturesOf(l layout, seed int, unknown []int, log io.Writer) (nearFeatures, error) {
	cache := filepath.Join(filepath.Dir(l.data), "near-features.gob")
	var nf nearFeatures
	if f, err := os.Open(cache); err == nil {
		defer f.Close()
		err = gob.NewDecoder(f).Decode(&nf)
		return nf, err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nf, err
	}
	for i, u := range unknown {
		if i < len(unknown)-2 {
			nf.NearVal = append(nf.NearVal, folderName(u))
		} else {
			nf.NearTest = append(nf.NearTest, folderName(u))
		}
	}
	if len(nf.NearVal) == 0 {
		return nf, fmt.Errorf("seed %d: the near study needs a run trained with --unknown 3 or 4", seed)
	}
	if err := os.RemoveAll(l.model); err != nil {
		return nf, err
	}
	if err := train.Export(l.run, l.model, 0); err != nil {
		return nf, err
	}
	c, err := infer.Open(context.Background(), l.model, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil))
	if err != nil {
		return nf, err
	}
	defer c.Close()
	_, nf.AcceptRate = c.UnknownThreshold()
	s, err := newStagedSession(l.model, c.Manifest())
	if err != nil {
		return nf, err
	}
	defer s.close()
	nf.Sets = map[string][]nearRecord{}
	nc := nearCollector{c: c, s: s, seed: seed, log: log, nf: &nf}
	if err := nc.addValidationHalves(l.run); err != nil {
		return nf, err
	}
	if err := nc.addKinds(l); err != nil {
		return nf, err
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(nf); err != nil {
		return nf, err
	}
	return nf, durable.WriteFile(cache, buf.Bytes())
}

// nearCollector computes the records of one seed's sets into nf.
type nearCollector struct {
	c    *infer.Classifier
	s    *stagedSession
	seed int
	log  io.Writer
	nf   *nearFeatures
}

func (nc nearCollector) add(name string, imgs []image.Image, classes []string, labels []int) error {
	fmt.Fprintf(nc.log, "seed %d: near study: %s (%d images)\n", nc.seed, name, len(imgs))
	r, err := records(nc.c, nc.s, imgs, classes, labels)
	nc.nf.Sets[name] = r
	return err
}

// addValidationHalves adds the run's validation split in two halves: one
// to fit the new scores ("fit"), one for standardisation and thresholds
// ("ref").
func (nc nearCollector) addValidationHalves(runDir string) error {
	run, err := train.Open(runDir, train.Options{Log: io.Discard})
	if err != nil {
		return err
	}
	ds, idx := run.ValidationImages(len(run.Stream().Tasks))
	run.Close()
	var half [2][]image.Image
	var halfLabels [2][]int
	for i, j := range idx {
		img := &image.Gray{Pix: ds.Image(j), Stride: ds.Width, Rect: image.Rect(0, 0, ds.Width, ds.Height)}
		half[i%2] = append(half[i%2], img)
		halfLabels[i%2] = append(halfLabels[i%2], ds.Labels[j])
	}
	if err := nc.add("fit", half[0], nil, halfLabels[0]); err != nil {
		return err
	}
	return nc.add("ref", half[1], nil, halfLabels[1])
}

// addKinds adds, for the validation and the test split, the known test
// images (alternate halves), their shifted copies, far photos, synthetic
// images and the split's near classes.
func (nc nearCollector) addKinds(l layout) error {
	known, knownClasses, err := folderImages(filepath.Join(l.data, "test"), nil)
	if err != nil {
		return err
	}
	var knownHalf [2][]image.Image
	var classHalf [2][]string
	for i, img := range known {
		knownHalf[i%2] = append(knownHalf[i%2], img)
		classHalf[i%2] = append(classHalf[i%2], knownClasses[i])
	}
	photos, _, err := outsideImages()
	if err != nil {
		return err
	}
	for h, split := range []string{splitValidation, splitTest} {
		near, _, err := folderImages(l.unknownTest, [][]string{nc.nf.NearVal, nc.nf.NearTest}[h])
		if err != nil {
			return err
		}
		for _, set := range []struct {
			kind    string
			imgs    []image.Image
			classes []string
		}{{"known", knownHalf[h], classHalf[h]}, {kindShifted, shifted(knownHalf[h], nc.seed), nil},
			{kindFarPhotos, photos[h], nil}, {kindFarSynthetic, synthetic(uint64(nc.seed)*2 + uint64(h)), nil},
			{kindNear, near, nil}} {
			if err := nc.add(split+"/"+set.kind, set.imgs, set.classes, nil); err != nil {
				return err
			}
		}
	}
	return nil
}
