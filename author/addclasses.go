package author

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/names"
)

// MinAddImages is the fewest labelled images AddClasses takes for a class.
// The classifier's shrinkage makes a covariance from 10 to 50 images usable
// (it blends it with a multiple of its mean variance), but below 5 the mean
// itself is too noisy to place the class.
const MinAddImages = 5

// embedBatch is how many images AddClasses decodes and embeds at once, so
// memory stays bounded however many images a class has.
const embedBatch = 32

// Sentinels of AddClasses and ReadClassFolders that callers branch on; the
// errors wrapping them name the folder, class or file.
var (
	// ErrClassFolder: the folder is not one sub-folder of image files per
	// class.
	ErrClassFolder = errors.New("not a folder of class folders")
	// ErrTooFewImages: a class has fewer than MinAddImages images.
	ErrTooFewImages = errors.New("too few images for a class")
	// ErrDuplicateClass: a class name is given twice or is already in the
	// model.
	ErrDuplicateClass = errors.New("duplicate class name")
	// ErrModelChanged: the model directory changed while it was read
	// (classes being added, or a calibration fitted); nothing was written.
	ErrModelChanged = errors.New("model directory changed while it was read")
	// ErrOutputExists: the output directory is the model itself, or exists
	// and is not empty, or another writer created it meanwhile; a new
	// version goes into a new directory. It is also fs.ErrExist
	// (errors.Is), which repository.CreateNextVersion retries on.
	ErrOutputExists error = existsError("output directory is in the way")
)

// existsError is an error that errors.Is takes for fs.ErrExist too.
type existsError string

func (e existsError) Error() string { return string(e) }

// Is makes the error fs.ErrExist for errors.Is.
func (e existsError) Is(target error) bool { return target == fs.ErrExist }

// LabelledImages are the image files of one new class.
type LabelledImages struct {
	Name  string   // the class name, unique in the model
	Files []string // image files
}

// ReadClassFolders lists dir as the layout AddClasses and Calibrate take:
// one sub-folder per class, named after it, holding that class's image
// files, by data.ListClassFolders, the rule every command that reads class
// folders follows (links to folders are class folders, hidden entries
// and other files are passed over, class folders are walked recursively,
// class names follow names.Class). skipped reports, one line each, what
// was passed over. Every problem is reported at once, in one error
// wrapping ErrClassFolder. Nothing is decoded: CheckImages does that.
func ReadClassFolders(dir string) (classes []LabelledImages, skipped []string, err error) {
	folders, skipped, err := data.ListClassFolders(dir)
	if err != nil {
		return nil, skipped, fmt.Errorf("%w: %w", ErrClassFolder, err)
	}
	for _, f := range folders {
		classes = append(classes, LabelledImages{Name: f.Name, Files: f.Files})
	}
	return classes, skipped, nil
}

// CheckImages decodes every image of classes, as AddClasses and Calibrate
// will (regular files only, at most maxPixels pixels), so that a folder is
// judged whole before any work: it returns classes with only the files
// that decode, and an error naming every one that does not (the first 20,
// then a count; it wraps each file's error, imaging.ErrFormat for a bad
// image), or nil when all decode. It is safe for concurrent use.
func CheckImages(classes []LabelledImages, maxPixels int64) ([]LabelledImages, error) {
	var files []string
	for _, c := range classes {
		files = append(files, c.Files...)
	}
	errs := data.CheckImageFiles(files, maxPixels)
	out := make([]LabelledImages, len(classes))
	i := 0
	for k, c := range classes {
		out[k].Name = c.Name
		for _, f := range c.Files {
			if errs[i] == nil {
				out[k].Files = append(out[k].Files, f)
			}
			i++
		}
	}
	return out, data.Unreadable(errs, len(files))
}

// Added describes a model directory AddClasses wrote.
type Added struct {
	Dir     string
	Classes []bundle.Class // the new classes, as in the new manifest
}

// AddClasses writes outDir, a new model directory that is modelDir plus
// the given classes, without retraining and without keeping the images
// (exemplar-free). It opens modelDir with opts (infer.Open), embeds every
// image with its backbone (infer.Classifier.EmbedInputs; each file is read
// by PrepareFile, regular files only, and reduced to the model's input
// before the next is decoded; with the model's test-time flip their
// mirrors too), estimates
// each new class's Gaussian (gauss.Estimate), and
// builds the classifier over old and new prototypes with the model's own
// options (shrinkage, normalisation, calibration; gauss.ClassifierOptions.WithAges,
// the new classes at age 0), so new classes are scored exactly
// like trained ones. The new classes get the next free class IDs, in the
// order given, form one new task, and record their image count in
// bundle.Class.AddedImages; a calibration is extended to them
// (gauss.Calibration.WithClasses). outDir is written through bundle.Create
// (atomic, checksummed, manifest digest: it opens with ManifestVerified)
// and must not exist yet or be empty (else ErrOutputExists); modelDir is
// never modified. When ctx is done, AddClasses stops and writes nothing;
// the error wraps ctx.Err().
//
// Errors: fewer than MinAddImages images (ErrTooFewImages), a name out of
// bounds (names.Class; names.ErrInvalid), a name repeated or already a
// class of the model (ErrDuplicateClass), an
// unreadable image (imaging.ErrFormat ...) or a named pipe or device
// (infer.ErrNotRegular), each naming the file, or a modelDir whose manifest
// changed while the images were embedded (ErrModelChanged).
func AddClasses(ctx context.Context, modelDir, outDir string, classes []LabelledImages, opts ...infer.Option) (Added, error) {
	b, manifestSum, err := openSource(modelDir, outDir)
	if err != nil {
		return Added{}, err
	}
	if err := checkNewClasses(b.Manifest.Classes, classes); err != nil {
		return Added{}, err
	}
	protos, err := embedClasses(ctx, modelDir, classes, opts)
	if err != nil {
		return Added{}, err
	}
	afterEmbed(modelDir)
	m, files, added, err := extend(b, classes, protos)
	if err != nil {
		return Added{}, fmt.Errorf("add classes to %s: %w", modelDir, err)
	}
	if err := checkUnchanged(modelDir, manifestSum, "add the classes to"); err != nil {
		return Added{}, err
	}
	if err := create(outDir, m, files); err != nil {
		return Added{}, err
	}
	return Added{Dir: outDir, Classes: added}, nil
}

// afterEmbed runs between embedding and the final check of the model
// directory; tests replace it to change the directory underneath.
var afterEmbed = func(string) {}

// checkNewClasses enforces valid, unique names and enough images.
func checkNewClasses(existing []bundle.Class, classes []LabelledImages) error {
	if len(classes) == 0 {
		return fmt.Errorf("%w: no classes to add", ErrClassFolder)
	}
	// Names are one class up to letter case and Unicode form (names.Key).
	taken := make(map[string]string, len(existing)+len(classes))
	named := make(map[string]string, len(existing)+len(classes))
	for _, c := range existing {
		taken[names.Key(c.Name)] = fmt.Sprintf("class %d of the model", c.ID)
		named[names.Key(c.Name)] = c.Name
	}
	var errs []error
	for i, c := range classes {
		key := names.Key(c.Name)
		switch err := names.Class(c.Name); {
		case err != nil:
			errs = append(errs, fmt.Errorf("new class %d: %w", i, err))
		case taken[key] != "" && named[key] != c.Name:
			errs = append(errs, fmt.Errorf("%w: %q is already %s, %q, up to letter case or Unicode form", ErrDuplicateClass, c.Name, taken[key], named[key]))
		case taken[key] != "":
			errs = append(errs, fmt.Errorf("%w: %q is already %s", ErrDuplicateClass, c.Name, taken[key]))
		}
		taken[key] = fmt.Sprintf("new class %d", i)
		named[key] = c.Name
		if len(c.Files) < MinAddImages {
			errs = append(errs, fmt.Errorf("class %q: %w: %d images, want at least %d", c.Name, ErrTooFewImages, len(c.Files), MinAddImages))
		}
	}
	return errors.Join(errs...)
}

// checkOutDir refuses to write over the source or over anything that
// exists and is not empty.
func checkOutDir(modelDir, outDir string) error {
	src, err1 := filepath.Abs(modelDir)
	dst, err2 := filepath.Abs(outDir)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if src == dst {
		return fmt.Errorf("%w: %s is the model itself; a new version goes into a new directory", ErrOutputExists, outDir)
	}
	entries, err := os.ReadDir(outDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("output directory %s: %w", outDir, err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s exists and is not empty; a new version goes into a new directory", ErrOutputExists, outDir)
	}
	return nil
}

// embedClasses estimates one Gaussian per class from its images' features.
// A model with the test-time flip (gauss.ClassifierOptions.TestFlip) adds
// the features of the mirrored images, as training adds mirrored copies to a
// new class's statistics when it mirrors images (data.horizontal_flip, which
// the test-time flip goes with).
func embedClasses(ctx context.Context, modelDir string, classes []LabelledImages, opts []infer.Option) ([]gauss.Gaussian, error) {
	c, err := infer.Open(ctx, modelDir, opts...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	m := c.Manifest()
	s := m.FeatureDim
	out := make([]gauss.Gaussian, len(classes))
	for i, class := range classes {
		features := make([]float32, 0, len(class.Files)*s)
		err := eachBatch(c, class, func(inputs []infer.Input) error {
			if m.Classifier.TestFlip {
				mirrored := make([]infer.Input, len(inputs))
				for j, in := range inputs {
					var err error
					if mirrored[j], err = c.Mirror(in); err != nil {
						return err
					}
				}
				inputs = append(inputs, mirrored...)
			}
			rows, err := c.EmbedInputs(ctx, inputs)
			if err != nil {
				return err
			}
			for _, r := range rows {
				features = append(features, r...)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if out[i], err = gauss.Estimate(features, len(features)/s, s); err != nil {
			return nil, fmt.Errorf("class %q: %w", class.Name, err)
		}
	}
	return out, nil
}

// eachBatch reduces the images of class to the model's input one at a
// time (infer.Classifier.PrepareFile) and calls f on each batch of
// embedBatch of them, so memory stays bounded however many images a class
// has and however large each is; errors name the class.
func eachBatch(c *infer.Classifier, class LabelledImages, f func([]infer.Input) error) error {
	for start := 0; start < len(class.Files); start += embedBatch {
		paths := class.Files[start:min(start+embedBatch, len(class.Files))]
		inputs := make([]infer.Input, len(paths))
		for i, p := range paths {
			var err error
			if inputs[i], err = c.PrepareFile(p); err != nil {
				return fmt.Errorf("class %q: %w", class.Name, err)
			}
		}
		if err := f(inputs); err != nil {
			return fmt.Errorf("class %q: %w", class.Name, err)
		}
	}
	return nil
}

// extend builds the manifest and files of b plus the new classes.
func extend(b *bundle.Bundle, classes []LabelledImages, newProtos []gauss.Gaussian) (*bundle.Manifest, map[string][]byte, []bundle.Class, error) {
	m := b.Manifest
	old := b.Prototypes
	protos := old.Gaussians()
	priors, err := priorsOf(m, old.Bias, protos, len(newProtos))
	if err != nil {
		return nil, nil, nil, err
	}
	protos = append(protos, newProtos...)
	added := newClassEntries(m, classes)
	clf, err := gauss.NewClassifier(protos, priors, m.Classifier.WithAges(bundle.Ages(append(slices.Clone(m.Classes), added...))))
	if err != nil {
		return nil, nil, nil, err
	}
	tables := clf.Tables()
	files := map[string][]byte{}
	for _, name := range []string{bundle.BackboneFile, bundle.AdapterFile} {
		if b.Has(name) {
			if files[name], err = b.ReadFile(name); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	shortlist, classifier, err := classgraph.ModelFiles(tables, protos, files[bundle.BackboneFile], m.Classifier.ShortlistSize(len(protos)))
	if err != nil {
		return nil, nil, nil, err
	}
	m.Shortlist, m.ModelFeatures = shortlist, true
	maps.Copy(files, classifier)
	p := bundle.NewPrototypes(protos, tables.Bias, tables.Normalize)
	if files[bundle.PrototypesFile], err = p.Encode(); err != nil {
		return nil, nil, nil, err
	}
	m.Classes = append(slices.Clone(m.Classes), added...)
	task := make([]int, len(added))
	for i, c := range added {
		task[i] = c.ID
	}
	m.Tasks = append(slices.Clone(m.Tasks), task)
	if m.Calibration != nil {
		cal := *m.Calibration
		cal.ClassScales = m.Calibration.Gauss().WithClasses(len(m.Classes)).Scales
		m.Calibration = &cal
	}
	m.CreatedAt = time.Now().UTC()
	return &m, files, added, nil
}

// openSource opens the model directory a new version is written from,
// with its manifest's sum (for checkUnchanged), and checks that outDir
// may be written (checkOutDir).
func openSource(modelDir, outDir string) (*bundle.Bundle, [32]byte, error) {
	manifestSum, err := bundle.ManifestSum(modelDir)
	if err != nil {
		return nil, manifestSum, err
	}
	b, err := bundle.Open(modelDir)
	if err != nil {
		return nil, manifestSum, err
	}
	return b, manifestSum, checkOutDir(modelDir, outDir)
}

// create writes the new model directory outDir (bundle.Create): never
// over another writer's, which is ErrOutputExists.
func create(outDir string, m *bundle.Manifest, files map[string][]byte) error {
	err := bundle.Create(outDir, m, files)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %w", ErrOutputExists, err)
	}
	return err
}

// checkUnchanged returns ErrModelChanged, naming what to do (action the
// new version), when modelDir's manifest no longer has the sum read at
// the start.
func checkUnchanged(modelDir string, manifestSum [32]byte, action string) error {
	if now, err := bundle.ManifestSum(modelDir); err != nil || now != manifestSum {
		return fmt.Errorf("%s: %w; %s the new version", modelDir, ErrModelChanged, action)
	}
	return nil
}

// newClassEntries names the new classes with the next free IDs, in one new
// task.
func newClassEntries(m bundle.Manifest, classes []LabelledImages) []bundle.Class {
	next := 0
	for _, c := range m.Classes {
		next = max(next, c.ID+1)
	}
	out := make([]bundle.Class, len(classes))
	for i, c := range classes {
		// Tasks are numbered from 1: the new one is Manifest.Tasks[len].
		out[i] = bundle.Class{ID: next + i, Name: c.Name, Task: len(m.Tasks) + 1, AddedImages: len(c.Files)}
	}
	return out
}

// priorsOf returns the class priors for the classifier of old plus added
// classes: nil (uniform, unused) unless the model scores with the full
// Gaussian, whose bias b_c = log det Sigma'_c - 2 log pi_c holds the old
// priors. They are recovered against a uniform-prior classifier of the
// same prototypes, and every added class gets the old classes' mean prior.
func priorsOf(m bundle.Manifest, stored []float32, protos []gauss.Gaussian, added int) ([]float64, error) {
	if !m.Classifier.FullGaussian {
		return nil, nil
	}
	opts := m.Classifier.WithAges(bundle.Ages(m.Classes))
	opts.FullGaussian = true
	uniform, err := gauss.NewClassifier(protos, nil, opts)
	if err != nil {
		return nil, err
	}
	k := len(protos)
	priors := make([]float64, 0, k+added)
	var sum float64
	for c, b0 := range uniform.Tables().Bias {
		// b0 = logdet + 2 log K, stored b = logdet - 2 log pi_c.
		p := math.Exp((float64(b0) - 2*math.Log(float64(k)) - float64(stored[c])) / 2)
		priors = append(priors, p)
		sum += p
	}
	for range added {
		priors = append(priors, sum/float64(k))
	}
	return priors, nil
}
