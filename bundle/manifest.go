package bundle

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/names"
)

// SchemaVersion is the manifest format this package writes. Bump it on any
// change a reader of the previous version would misread. Version 2 numbers
// tasks from 1 (Class.Task), as everything bicyc shows a person does;
// version 1 numbered them from 0. Version 3 adds the classifier
// calibration options (gauss.ClassifierOptions.OffDiagShrink, AgeShrink,
// AgeBias, PoolCov) and Class.Age; a manifest of an older version has neither and
// keeps the classifier it was written with. Version 4 adds
// gauss.ClassifierOptions.TestFlip. Version 5 stores the class table once, in
// ClassifierDataFile, which classifier.onnx and model.onnx read as ONNX
// external data, and packed covariances in PrototypesFile (see
// Prototypes); an older bicyc would misread both. Version 6 adds
// gauss.ClassifierOptions.Shortlist, Manifest.Shortlist, ShortlistFile and
// Manifest.ModelFeatures. Open reads all six (see Open).
// gauss.ClassifierOptions.Head and GaussianWeight came without a new
// version: they are written only when set (omitempty), so a manifest
// without them is what it was, and a reader older than them refuses
// one with them as an unknown key instead of misreading it.
const SchemaVersion = 6

// oldestSchemaVersion is the oldest manifest format Open still reads.
const oldestSchemaVersion = 1

// Names of the files of a model directory.
const (
	ManifestFile   = "manifest.json"
	BackboneFile   = "backbone.onnx"   // image [N,C,H,W] -> features [N,S]
	AdapterFile    = "adapter.onnx"    // features_old [N,S] -> features [N,S]; only when Manifest.Adapter is set
	ClassifierFile = "classifier.onnx" // features [N,S] -> scores [N,K]
	ModelFile      = "model.onnx"      // image -> scores
	PrototypesFile = "prototypes.safetensors"
	// ClassifierDataFile is the classifier's [K, D] table, raw little-endian
	// float32 (gauss.QuadraticTables.Coef), which classifier.onnx and
	// model.onnx name as external data; absent before schema version 5,
	// when each graph held its own copy.
	ClassifierDataFile = "classifier.data"
	// ShortlistFile scores the features approximately and a shortlist of
	// classes exactly (Manifest.Shortlist), reading the exact rows from
	// ClassifierDataFile; only in a directory whose manifest has a
	// shortlist size (schema version 6 on).
	ShortlistFile = "shortlist.onnx" // features -> shortlist classes and scores, approximate scores
)

// requiredFiles must be listed in every manifest.
var requiredFiles = []string{BackboneFile, ClassifierFile, ModelFile, PrototypesFile}

// ErrManifest is wrapped by every error about manifest content that is not
// a schema version mismatch: malformed JSON, inconsistent classes and
// tasks, missing required entries.
var ErrManifest = errors.New("invalid manifest")

// Manifest describes a model directory; it is stored as manifest.json.
// Classes are in score order: column c of the ONNX scores, and index c of
// the prototypes, is Classes[c].
type Manifest struct {
	SchemaVersion int       `json:"schema_version"`
	BicycVersion  string    `json:"bicyc_version"`
	CreatedAt     time.Time `json:"created_at"`
	// MinRuntimeVersion is the oldest ONNX Runtime release that reads the
	// directory with package infer, e.g. "1.24.0" (see MinRuntimeVersion).
	MinRuntimeVersion string `json:"onnxruntime_min_version"`

	// Backbone is the architecture of backbone.onnx ("convnet", "resnet18").
	Backbone   string `json:"backbone"`
	FeatureDim int    `json:"feature_dim"`
	// Adapter is the kind of adapter.onnx ("mlp", "linear", "linear-bias",
	// "residual-mlp"; export.Adapter), or empty when
	// the directory has none (a model trained on one task).
	Adapter    string                  `json:"adapter,omitempty"`
	Classifier gauss.ClassifierOptions `json:"classifier"`
	// Preprocess is the test-time preprocessing the backbone expects.
	Preprocess imaging.Preprocess `json:"preprocess"`

	Classes []Class `json:"classes"`
	// Tasks is the task stream: Tasks[t] lists the class IDs of task t in
	// training order.
	Tasks [][]int `json:"tasks"`
	// Calibration turns scores into a confidence and an "unknown" answer;
	// nil when the model was exported without held-out images.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Shortlist is the approximate scoring of a model of many classes;
	// nil when none was asked for (gauss.ClassifierOptions.ShortlistSize).
	Shortlist *Shortlist `json:"shortlist,omitempty"`
	// ModelFeatures says that ModelFile also outputs TensorFeatures, the
	// backbone feature the scores came from, so a reader that needs both
	// runs the backbone once (written since schema version 6; a model.onnx
	// copied from an older directory keeps it false).
	ModelFeatures bool `json:"model_features,omitempty"`

	// Config and Metrics are the trainer's configuration and results,
	// stored verbatim so that this package does not depend on the trainer.
	Config  json.RawMessage `json:"config,omitempty"`
	Metrics json.RawMessage `json:"metrics,omitempty"`

	// Files maps every other file of the directory to its checksum.
	Files map[string]File `json:"files"`
}

// Class is one class the model predicts.
type Class struct {
	ID   int    `json:"id"`   // the dataset's label
	Name string `json:"name"` // human-readable; may be empty
	Task int    `json:"task"` // the task that brought it, from 1: Manifest.Tasks[Task-1] lists it
	// AddedImages is, for a class added without retraining (bicyc-infer
	// add-classes), the number of labelled images its Gaussian was
	// estimated from; 0 for classes the model was trained on.
	AddedImages int `json:"added_images,omitempty"`
	// Age is the number of tasks trained after the class's own when the
	// model was exported (the transports its prototype went through): 0
	// for the last task's classes and for added classes. Only the
	// classifier's AgeShrink and AgeBias read it.
	Age int `json:"age,omitempty"`
}

// Ages returns the age of every class (Class.Age), in order: what
// gauss.ClassifierOptions.WithAges takes to build the classifier of a
// manifest, m.Classifier.WithAges(Ages(m.Classes)). Training, export and
// add-classes all build their classifier that way, so they agree.
func Ages(classes []Class) []int {
	ages := make([]int, len(classes))
	for i, c := range classes {
		ages[i] = c.Age
	}
	return ages
}

// Shortlist is the shortlist a model directory scores with
// (ShortlistFile; gauss.ClassifierOptions.Shortlist) and the check that
// chose its size when the directory was written: features drawn from the
// class Gaussians, scored exactly and approximately
// (classgraph.PlanShortlist).
type Shortlist struct {
	// Size is how many classes are scored exactly per image; 0 when no
	// size the check tried kept the exact closest class often enough, so
	// the directory scores every class exactly and has no ShortlistFile.
	Size int `json:"size"`
	// CheckSamples is how many features the check scored, and CheckTop1
	// the share of them whose exact closest class was among the shortlisted
	// (at the largest size tried when Size is 0).
	CheckSamples int     `json:"check_samples"`
	CheckTop1    float64 `json:"check_top1"`
}

// ShortlistSize is how many classes the model's shortlist (ShortlistFile)
// scores exactly per image, 0 when it scores every class exactly.
func (m *Manifest) ShortlistSize() int {
	if m.Shortlist == nil {
		return 0
	}
	return m.Shortlist.Size
}

// File is the size and lower-case hex SHA-256 of one file.
type File struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// UnknownScore is the score the model answers "unknown" by unless a
// reader asks for another: classifier.unknown_score, or, in a manifest
// written before scores could be chosen, gauss.ScoreMahalanobis with a
// calibration and gauss.ScoreNearestDistance without.
func (m *Manifest) UnknownScore() gauss.UnknownScore {
	switch {
	case m.Classifier.UnknownScore != "":
		return m.Classifier.UnknownScore
	case m.Calibration != nil:
		return gauss.ScoreMahalanobis
	}
	return gauss.ScoreNearestDistance
}

// Validate reports every inconsistency of m, joined, each wrapping
// ErrManifest: a non-positive feature dim, a classifier option out of range
// (also wrapping gauss.ErrOptions), an invalid preprocessing (also wrapping imaging.ErrPreprocess), duplicate class IDs, classes and tasks that disagree, a
// required file, the adapter file or the shortlist file missing from Files
// (or listed without its setting), or a file name that
// is not a plain name in the directory, a calibration that does not fit the
// classes (also wrapping gauss.ErrCalibration). It does not look at the disk.
func (m *Manifest) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, manifestErrorf(format, args...)) }
	if m.Backbone == "" {
		bad("no backbone architecture")
	}
	if m.FeatureDim < 1 {
		bad("feature_dim %d, want >= 1", m.FeatureDim)
	}
	for _, p := range m.Classifier.Problems() {
		errs = append(errs, fmt.Errorf("%w: classifier %w", ErrManifest, p))
	}
	if err := m.Preprocess.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrManifest, err))
	}
	if len(m.Classes) == 0 {
		bad("no classes")
	}
	classErrs, tasked, distinct := m.classProblems()
	errs = append(errs, classErrs...)
	if m.Calibration != nil {
		if err := m.Calibration.validate(len(m.Classes), m.UnknownScore()); err != nil {
			errs = append(errs, err)
		}
	} else if u := m.Classifier.UnknownScore; u != "" && u != gauss.ScoreNearestDistance {
		bad("classifier.unknown_score %s needs a calibration; a model without one answers by %s", u, gauss.ScoreNearestDistance)
	}
	if tasked != distinct {
		bad("the task stream has %d classes, classes has %d", tasked, distinct)
	}
	errs = append(errs, m.fileProblems()...)
	return errors.Join(errs...)
}

// classProblems checks the classes against each other and against the
// task stream; it returns the problems, the number of classes the stream
// holds and the number of distinct class IDs.
func (m *Manifest) classProblems() (errs []error, tasked, distinct int) {
	taskOf := make(map[int]int, len(m.Classes))
	for t, ids := range m.Tasks {
		for _, id := range ids {
			if _, dup := taskOf[id]; dup {
				errs = append(errs, manifestErrorf("class id %d appears in more than one task", id))
			}
			taskOf[id] = t
		}
	}
	seen := make(map[int]bool, len(m.Classes))
	for i, c := range m.Classes {
		if seen[c.ID] {
			errs = append(errs, manifestErrorf("class id %d appears twice in classes", c.ID))
		}
		seen[c.ID] = true
		if c.Name != "" {
			// JSON would silently replace invalid bytes, and a newline
			// splits every table the name is printed in.
			// Stored: models made before names.Class refused some names
			// keep opening (infer warns).
			if err := names.Stored(c.Name); err != nil {
				errs = append(errs, fmt.Errorf("%w: classes[%d] (id %d): %w", ErrManifest, i, c.ID, err))
			}
		}
		if c.AddedImages < 0 {
			errs = append(errs, manifestErrorf("classes[%d] (id %d) has added_images %d, want >= 0", i, c.ID, c.AddedImages))
		}
		if c.Age < 0 || c.Task+c.Age > len(m.Tasks) {
			errs = append(errs, manifestErrorf("classes[%d] (id %d) has age %d, want 0 to the %d tasks after its task %d", i, c.ID, c.Age, len(m.Tasks)-c.Task, c.Task))
		}
		if t, ok := taskOf[c.ID]; !ok || t+1 != c.Task {
			errs = append(errs, manifestErrorf("classes[%d] (id %d) says task %d, but the task stream puts it in task %d (0: none)", i, c.ID, c.Task, lookupTask(taskOf, c.ID)))
		}
	}
	return errs, len(taskOf), len(seen)
}

// fileProblems checks the files the manifest lists: the required ones, the
// optional ones its settings need, and each name, size and checksum.
func (m *Manifest) fileProblems() (errs []error) {
	for _, name := range requiredFiles {
		if _, ok := m.Files[name]; !ok {
			errs = append(errs, manifestErrorf("files has no %s", name))
		}
	}
	if _, ok := m.Files[AdapterFile]; ok != (m.Adapter != "") {
		errs = append(errs, manifestErrorf("adapter kind %q but %s listed: %v", m.Adapter, AdapterFile, ok))
	}
	if _, ok := m.Files[ShortlistFile]; ok != (m.ShortlistSize() > 0) {
		errs = append(errs, manifestErrorf("shortlist of %d classes but %s listed: %v", m.ShortlistSize(), ShortlistFile, ok))
	}
	if sl := m.Shortlist; sl != nil && (sl.Size < 0 || sl.Size > len(m.Classes) || sl.CheckSamples < 0 || !(sl.CheckTop1 >= 0 && sl.CheckTop1 <= 1)) {
		errs = append(errs, manifestErrorf("shortlist size %d, check of %d samples, top-1 %v: want a size of 0 to the %d classes, samples >= 0 and a share in [0, 1]", sl.Size, sl.CheckSamples, sl.CheckTop1, len(m.Classes)))
	}
	for name, f := range m.Files {
		if err := checkFileName(name); err != nil {
			errs = append(errs, err)
		}
		if _, err := hex.DecodeString(f.SHA256); err != nil || f.Size < 0 || len(f.SHA256) != 64 || strings.ToLower(f.SHA256) != f.SHA256 {
			errs = append(errs, manifestErrorf("files[%q] has size %d and sha256 %q, want a size >= 0 and 64 lower-case hex digits", name, f.Size, f.SHA256))
		}
	}
	return errs
}

// manifestErrorf is a problem of a manifest, wrapping ErrManifest.
func manifestErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrManifest}, args...)...)
}

// lookupTask returns the task, numbered from 1, that the stream puts class
// id in, 0 if none.
func lookupTask(taskOf map[int]int, id int) int {
	if t, ok := taskOf[id]; ok {
		return t + 1
	}
	return 0
}

// checkFileName accepts only plain names inside the directory, so a
// manifest cannot point Open at files elsewhere.
func checkFileName(name string) error {
	if name == "" || name == ManifestFile || name == DigestFile || strings.HasPrefix(name, ".") ||
		strings.ContainsAny(name, `/\`) || filepath.Base(name) != name {
		return fmt.Errorf("%w: file name %q is not a plain file name in the model directory", ErrManifest, name)
	}
	return nil
}
