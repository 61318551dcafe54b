package author

import (
	"maps"
	"slices"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/gauss"
)

// Shortlist writes outDir: the model in modelDir with the shortlist of
// share (gauss.ClassifierOptions.Shortlist; 0 removes it) in place of its
// own, checked and sized by classgraph.PlanShortlist. It is how a model
// directory written before shortlists existed, or with another share,
// gets one without retraining. A model of fewer than
// gauss.ShortlistMinClasses classes, or with the test-time flip, keeps
// scoring every class exactly. The classifier is rebuilt from the
// prototypes as AddClasses builds it (a directory of schema version 4 or
// older so gets the current layout); every other file is copied. It
// returns the manifest's new shortlist: nil when none applies, a Size of
// 0 when the check refused every size. outDir must not exist or be empty
// (ErrOutputExists), and modelDir is never modified (ErrModelChanged if it
// changes meanwhile). A share out of [0, 1] wraps gauss.ErrOptions.
func Shortlist(modelDir, outDir string, share float64) (*bundle.Shortlist, error) {
	b, manifestSum, err := openSource(modelDir, outDir)
	if err != nil {
		return nil, err
	}
	m := b.Manifest
	m.Classifier.Shortlist = share
	if err := m.Classifier.Validate(); err != nil {
		return nil, err
	}
	protos := b.Prototypes.Gaussians()
	priors, err := priorsOf(m, b.Prototypes.Bias, protos, 0)
	if err != nil {
		return nil, err
	}
	clf, err := gauss.NewClassifier(protos, priors, m.Classifier.WithAges(bundle.Ages(m.Classes)))
	if err != nil {
		return nil, err
	}
	rebuilt := []string{bundle.ClassifierFile, bundle.ModelFile, bundle.ClassifierDataFile, bundle.ShortlistFile}
	files := make(map[string][]byte, len(m.Files))
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		if !slices.Contains(rebuilt, name) {
			if files[name], err = b.ReadFile(name); err != nil {
				return nil, err
			}
		}
	}
	var classifier map[string][]byte
	if m.Shortlist, classifier, err = classgraph.ModelFiles(clf.Tables(), protos, files[bundle.BackboneFile], m.Classifier.ShortlistSize(len(protos))); err != nil {
		return nil, err
	}
	maps.Copy(files, classifier)
	m.ModelFeatures = true
	if err := checkUnchanged(modelDir, manifestSum, "shortlist"); err != nil {
		return nil, err
	}
	if err := create(outDir, &m, files); err != nil {
		return nil, err
	}
	return m.Shortlist, nil
}
