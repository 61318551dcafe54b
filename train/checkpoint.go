package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/safetensors"
)

// A checkpoint is a directory checkpoints/task-NN of the run directory:
//
//	backbone.safetensors    backbone weights and BatchNorm running statistics
//	adapter.safetensors     the last task's adapter A (absent before task 2)
//	prototypes.safetensors  "classes" [K], "means" [K,S], "covariances" [K,S,S]
//	heldout.safetensors     "features" [N,S] ([2N,S] with test_flip: then the
//	                        mirrors'), "classes" [N]: the held-out images'
//	                        features an export is calibrated on (absent
//	                        without a validation split, and from checkpoints
//	                        written before they were stored)
//	state.json              completed tasks, class counts, per-task reports
//
// It is built in a hidden sibling directory, every file synced, and moved
// into place (durable.ReplaceDir); checkpoints/latest (durable.WriteFile)
// names the newest one.
// A crash therefore leaves either the previous checkpoint or the new one.
// Random state needs no saving: every random source is derived from the
// seed, the task and the epoch (Run.rng, data.Batcher.Epoch).

// heldOutFile is the checkpoint's file of held-out features, and
// metadataTestFlip its metadata key saying whether they hold the mirrors'
// ("true" or "false").
const (
	heldOutFile      = "heldout.safetensors"
	metadataTestFlip = "test_flip"
)

// heldOut are the backbone features of a checkpoint's held-out images
// (Run.heldOutFeatures), stored with it so that an export is calibrated
// without loading the run's data or its networks.
type heldOut struct {
	features []float32 // [N,S], with mirrored [2N,S]: the images', then their mirrors'
	classIDs []int     // [N]
	mirrored bool
}

func (h *heldOut) tensors(s int) []safetensors.Tensor {
	ids := make([]float32, len(h.classIDs))
	for i, c := range h.classIDs {
		ids[i] = float32(c)
	}
	return []safetensors.Tensor{
		{Name: "features", Shape: []int{len(h.features) / s, s}, Data: h.features},
		{Name: "classes", Shape: []int{len(ids)}, Data: ids},
	}
}

// readHeldOut reads a checkpoint's heldout.safetensors of features of
// dimension s; nil when the checkpoint has none.
func readHeldOut(path string, s int) (*heldOut, error) {
	ts, meta, err := safetensors.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	features, ok1 := safetensors.Find(ts, "features")
	classes, ok2 := safetensors.Find(ts, "classes")
	flip, ok3 := map[string]bool{"true": true, "false": false}[meta[metadataTestFlip]]
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("checkpoint %s: want tensors features and classes and metadata %s true or false", path, metadataTestFlip)
	}
	rows := len(classes.Data)
	if flip {
		rows *= 2
	}
	if len(features.Data) != rows*s {
		return nil, fmt.Errorf("checkpoint %s: %d classes need features [%d,%d], got %v", path, len(classes.Data), rows, s, features.Shape)
	}
	h := &heldOut{features: features.Data, classIDs: make([]int, len(classes.Data)), mirrored: flip}
	for i, c := range classes.Data {
		h.classIDs[i] = int(c)
	}
	return h, nil
}

type checkpointState struct {
	Completed   int                 `json:"completed"`
	ClassCounts map[int]int         `json:"class_counts"`
	Reports     []rundir.TaskReport `json:"reports"`
	AdapterKind arch.Mapper         `json:"adapter_kind,omitempty"`
}

func checkpointDir(runDir string, completed int) string {
	return filepath.Join(runDir, rundir.CheckpointsDir, rundir.CheckpointName(completed))
}

// saveCheckpoint writes the state after st.Completed tasks.
func saveCheckpoint(runDir string, st *State) error {
	final := checkpointDir(runDir, st.Completed)
	// A write of this checkpoint a kill interrupted leaves litter beside it.
	if err := durable.Recover(final, isCheckpoint); err != nil {
		return err
	}
	tmp, err := durable.NewDir(final)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := safetensors.WriteFile(filepath.Join(tmp, "backbone.safetensors"), st.Backbone.State(), map[string]string{
		"arch": string(st.Backbone.Arch()), "feature_dim": fmt.Sprint(st.Backbone.FeatureDim()), "in_channels": fmt.Sprint(st.Backbone.InChannels()),
	}); err != nil {
		return err
	}
	cs := checkpointState{Completed: st.Completed, ClassCounts: st.ClassCounts, Reports: st.Reports}
	if st.Adapter != nil {
		cs.AdapterKind = st.Adapter.Kind()
		if err := safetensors.WriteFile(filepath.Join(tmp, "adapter.safetensors"), st.Adapter.State(), map[string]string{"kind": string(st.Adapter.Kind())}); err != nil {
			return err
		}
	}
	if err := safetensors.WriteFile(filepath.Join(tmp, "prototypes.safetensors"), prototypeTensors(st.Prototypes), nil); err != nil {
		return err
	}
	if h := st.heldOut; h != nil {
		if err := safetensors.WriteFile(filepath.Join(tmp, heldOutFile), h.tensors(st.Backbone.FeatureDim()), map[string]string{
			metadataTestFlip: fmt.Sprint(h.mirrored),
		}); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(tmp, "state.json"), b); err != nil {
		return err
	}
	// A checkpoint of the same task from an interrupted earlier attempt is replaced.
	if err := durable.ReplaceDir(tmp, final); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(filepath.Dir(final), rundir.LatestFile), []byte(filepath.Base(final)+"\n"))
}

// latestCheckpoint returns the directory of the checkpoint named by
// checkpoints/latest, or "" when the run has none yet.
func latestCheckpoint(runDir string) (string, error) {
	n, ok, err := rundir.LatestCompleted(runDir)
	if !ok || err != nil {
		return "", err
	}
	return filepath.Join(runDir, rundir.CheckpointsDir, rundir.CheckpointName(n)), nil
}

// loadLatestCheckpoint reads the checkpoint named by checkpoints/latest, or
// returns nil when the run has none yet.
func loadLatestCheckpoint(runDir string, cfg config.Config) (*State, error) {
	dir, err := latestCheckpoint(runDir)
	if dir == "" || err != nil {
		return nil, err
	}
	return LoadCheckpoint(dir, cfg)
}

// checkpointFiles are the contents of a checkpoint's files as stored,
// before any network is built from them: what an export reads.
type checkpointFiles struct {
	dir         string
	state       checkpointState
	backbone    []safetensors.Tensor
	adapter     []safetensors.Tensor // nil when state.AdapterKind is empty
	prototypes  map[int]gauss.Gaussian
	heldOut     *heldOut
	classCounts map[int]int
}

// readCheckpoint reads the files of one checkpoint directory of a run
// whose features have dimension s.
func readCheckpoint(dir string, s int) (*checkpointFiles, error) {
	c := &checkpointFiles{dir: dir}
	if err := readJSON(filepath.Join(dir, "state.json"), &c.state); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	c.classCounts = c.state.ClassCounts
	if c.classCounts == nil {
		c.classCounts = map[int]int{}
	}
	var err error
	if c.backbone, _, err = safetensors.ReadFile(filepath.Join(dir, "backbone.safetensors")); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if c.state.AdapterKind != "" {
		if c.adapter, _, err = safetensors.ReadFile(filepath.Join(dir, "adapter.safetensors")); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	path := filepath.Join(dir, "prototypes.safetensors")
	ts, _, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if c.prototypes, err = prototypesFromTensors(ts, s); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if c.heldOut, err = readHeldOut(filepath.Join(dir, heldOutFile), s); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadCheckpoint reads one checkpoint directory of a run with configuration
// cfg and builds its networks.
func LoadCheckpoint(dir string, cfg config.Config) (*State, error) {
	c, err := readCheckpoint(dir, cfg.Model.FeatureDim)
	if err != nil {
		return nil, err
	}
	st := &State{Completed: c.state.Completed, ClassCounts: c.classCounts, Reports: c.state.Reports,
		Prototypes: c.prototypes, heldOut: c.heldOut}
	if st.Backbone, err = newBackbone(cfg, placeholderRand()); err != nil {
		return nil, err
	}
	if err := st.Backbone.SetState(c.backbone); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", filepath.Join(dir, "backbone.safetensors"), err)
	}
	if c.adapter != nil {
		if st.Adapter, err = models.NewMapper(c.state.AdapterKind, cfg.Model.FeatureDim, cfg.Model.HiddenMult, placeholderRand()); err != nil {
			return nil, err
		}
		if err := st.Adapter.SetState(c.adapter); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", filepath.Join(dir, "adapter.safetensors"), err)
		}
	}
	return st, nil
}

// roundPrototypes rounds every mean and covariance entry to float32, the
// precision of prototypes.safetensors.
func roundPrototypes(protos map[int]gauss.Gaussian) {
	for _, g := range protos {
		for i, v := range g.Mean {
			g.Mean[i] = float64(float32(v))
		}
		s := len(g.Mean)
		for a := 0; a < s; a++ {
			for b := a; b < s; b++ {
				g.Cov.SetSym(a, b, float64(float32(g.Cov.At(a, b))))
			}
		}
	}
}

// placeholderRand initialises models whose weights are then overwritten by
// a checkpoint.
func placeholderRand() *rand.Rand { return rand.New(rand.NewPCG(0, 0)) }

// prototypeTensors stores prototypes in class-id order as float32 tensors.
func prototypeTensors(protos map[int]gauss.Gaussian) []safetensors.Tensor {
	ids := sortedClasses(protos)
	k := len(ids)
	s := 0
	if k > 0 {
		s = protos[ids[0]].Dim()
	}
	classes := make([]float32, k)
	means := make([]float32, 0, k*s)
	covs := make([]float32, 0, k*s*s)
	for i, c := range ids {
		classes[i] = float32(c)
		p := protos[c]
		for _, v := range p.Mean {
			means = append(means, float32(v))
		}
		for a := 0; a < s; a++ {
			for b := 0; b < s; b++ {
				covs = append(covs, float32(p.Cov.At(a, b)))
			}
		}
	}
	return []safetensors.Tensor{
		{Name: "classes", Shape: []int{k}, Data: classes},
		{Name: "means", Shape: []int{k, s}, Data: means},
		{Name: "covariances", Shape: []int{k, s, s}, Data: covs},
	}
}

func prototypesFromTensors(ts []safetensors.Tensor, s int) (map[int]gauss.Gaussian, error) {
	classes, ok1 := safetensors.Find(ts, "classes")
	means, ok2 := safetensors.Find(ts, "means")
	covs, ok3 := safetensors.Find(ts, "covariances")
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("want tensors classes, means and covariances")
	}
	k := len(classes.Data)
	if len(means.Data) != k*s || len(covs.Data) != k*s*s {
		return nil, fmt.Errorf("%d classes need means [%d,%d] and covariances [%d,%d,%d], got %v and %v", k, k, s, k, s, s, means.Shape, covs.Shape)
	}
	out := make(map[int]gauss.Gaussian, k)
	for i := 0; i < k; i++ {
		mean := make([]float64, s)
		for j := range mean {
			mean[j] = float64(means.Data[i*s+j])
		}
		cov := mat.NewSymDense(s, nil)
		for a := 0; a < s; a++ {
			for b := a; b < s; b++ {
				cov.SetSym(a, b, float64(covs.Data[i*s*s+a*s+b]))
			}
		}
		g := gauss.Gaussian{Mean: mean, Cov: cov}
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("prototype of class %d: %w", int(classes.Data[i]), err)
		}
		out[int(classes.Data[i])] = g
	}
	return out, nil
}

func sortedClasses(protos map[int]gauss.Gaussian) []int {
	ids := make([]int, 0, len(protos))
	for c := range protos {
		ids = append(ids, c)
	}
	sort.Ints(ids)
	return ids
}

// isCheckpoint reports whether dir holds state.json, the last file
// saveCheckpoint writes.
func isCheckpoint(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "state.json"))
	return err == nil
}

// writeConfig writes cfg as the run's config.yaml at path.
func writeConfig(path string, cfg config.Config) error {
	b, err := cfg.YAML()
	if err != nil {
		return err
	}
	return durable.WriteFile(path, b)
}
