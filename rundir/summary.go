package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/metrics"
)

// Summary is the run's metrics.json: the paper's metrics for the
// task-agnostic (TAg) and task-aware (TAw) classifiers, the accuracy
// matrices, and the per-task reports.
type Summary struct {
	Method    config.Method   `json:"method"`
	Seed      int64           `json:"seed"`
	Completed int             `json:"completed_tasks"`
	Tasks     int             `json:"tasks"`
	TAg       MetricSet       `json:"tag"`
	TAw       MetricSet       `json:"taw"`
	Reports   []TaskReport    `json:"reports"`
	MatrixTAg *metrics.Matrix `json:"acc_tag"`
	MatrixTAw *metrics.Matrix `json:"acc_taw"`
}

// MetricSet holds A_last, A_inc and F_last (fractions in [0,1]; docs/method.md,
// "Metrics") after the last completed task, and A_last after every step.
type MetricSet struct {
	ALast float64   `json:"a_last"`
	AInc  float64   `json:"a_inc"`
	FLast float64   `json:"f_last"`
	Steps []float64 `json:"a_last_per_step"`
}

// MetricsOf computes the metric set of the accuracy matrix m.
func MetricsOf(m *metrics.Matrix) MetricSet {
	ms := MetricSet{ALast: metrics.ALast(m), AInc: metrics.AInc(m), FLast: metrics.FLast(m, metrics.OldTasks)}
	for t := 0; t < m.Steps(); t++ {
		ms.Steps = append(ms.Steps, metrics.ALastAt(m, t))
	}
	return ms
}

// Validation returns the task-agnostic metrics on the validation split
// (data.val_per_class): the same A_last, A_inc and F_last as TAg, computed
// from every completed task's ValTAg. ok is false when a completed task
// has no validation accuracies (a run without a validation split). Choose
// settings on these numbers; the test metrics are read once at the end.
func (s Summary) Validation() (ms MetricSet, ok bool) {
	if s.MatrixTAg == nil || len(s.Reports) == 0 {
		return MetricSet{}, false
	}
	m, err := metrics.NewMatrix(s.MatrixTAg.ClassCounts())
	if err != nil {
		return MetricSet{}, false
	}
	for _, rep := range s.Reports {
		if len(rep.ValTAg) == 0 || m.AddStep(rep.ValTAg) != nil {
			return MetricSet{}, false
		}
	}
	return MetricsOf(m), true
}

// TaskReport records what happened in one task: its accuracy row, the last
// epoch's loss terms, and where the time went.
type TaskReport struct {
	Task    int       `json:"task"` // 1-based
	Classes []int     `json:"classes"`
	TAg     []float64 `json:"tag"` // accuracy on the test set of each task so far
	TAw     []float64 `json:"taw"`
	// Losses are the mean unweighted Stage I loss terms of the last epoch.
	Losses map[string]float64 `json:"losses"`
	// AdapterLoss is the last Stage II epoch's mean MSE(A(z_old), z_new).
	AdapterLoss float64 `json:"adapter_loss,omitempty"`
	// Seconds spent in each stage, and Stage I training images per second.
	Stage1Seconds     float64 `json:"stage1_seconds"`
	Stage1ImagesPerS  float64 `json:"stage1_images_per_second"`
	Stage2Seconds     float64 `json:"stage2_seconds"`
	TransportSeconds  float64 `json:"transport_seconds"`
	EvaluationSeconds float64 `json:"evaluation_seconds"`
	// Transport says which map carried the old classes into this task's
	// feature space (adapter.select); nil for task 1 and finetune.
	Transport *TransportChoice `json:"transport,omitempty"`
	// Anchors records the drift anchors added to Stage II's fit
	// (anchors.per_class); nil when there were none.
	Anchors *AnchorReport `json:"anchors,omitempty"`
	// ValTAg is the task-agnostic accuracy on each task's validation
	// images (data.val_per_class); empty when a task has none.
	ValTAg []float64 `json:"val_tag,omitempty"`
	// Drift holds the drift diagnostics when eval.drift is on.
	Drift *Drift `json:"drift,omitempty"`
	// Build is the bicyc build that trained this task: the Go version and,
	// for a binary built in a git work tree, the commit ("-dirty" with
	// uncommitted changes). Engine changes can alter float rounding, so runs
	// compared side by side should say which build made them. Empty in runs
	// from before it was recorded.
	Build string `json:"build,omitempty"`
	// Kernels names the BLAS kernels that trained this task and who chose them
	// (kernels.Status): kernel sets round differently, and their speeds differ
	// several-fold. Empty in runs from before it was recorded.
	Kernels string `json:"kernels,omitempty"`
	// Device is where this task trained (train.device): "cpu" so far. Empty in runs from before it was
	// recorded, all of which trained on the CPU.
	Device string `json:"device,omitempty"`
	// TrainedIn is the directory of the run that trained this task when
	// the run took it from another (train.Fork); empty when it trained it itself.
	TrainedIn string `json:"trained_in,omitempty"`
}

// TransportChoice records which map carried the old classes into the new
// feature space after a task (adapter.select) and the held-out MSE of each
// candidate on the validation images of the task's classes.
type TransportChoice struct {
	// Map is "adapter" (A), "ensemble" (the mean of A and the
	// adapter.ensemble members), "identity" (prototypes kept as they were)
	// or "linear" (the ridge least-squares affine map, gauss.FitAffine).
	Map string `json:"map"`
	// HeldOutMSE maps each candidate to MSE(map(z_old), z_new) on the
	// validation images; empty when the choice was not scored.
	HeldOutMSE map[string]float64 `json:"held_out_mse,omitempty"`
	// Images is the number of validation images scored.
	Images int `json:"images"`
	// Reason says why A was used without scoring, when it was.
	Reason string `json:"reason,omitempty"`
}

// AnchorReport records the drift anchors of one task (anchors.per_class;
// docs/method.md, "Drift anchors"): how close the signed-gradient search
// brought them to the old class means in the old feature space.
type AnchorReport struct {
	// PerClass is the number of anchors made for each old class.
	PerClass int `json:"per_class"`
	// Rows is the number of anchor pairs added to the Stage II fit.
	Rows int `json:"rows"`
	// Before and After are the mean over old classes of the mean distance
	// ||f_{t-1}(x) - mu_c|| of the class's anchors at the start and at the
	// end of the search; Spread is the mean over old classes of
	// sqrt(tr Sigma_c), the typical distance of a class member from its mean.
	Before float64 `json:"distance_before"`
	After  float64 `json:"distance_after"`
	Spread float64 `json:"class_spread"`
	// Classes holds the same three numbers for every old class.
	Classes []AnchorClass `json:"classes"`
	Seconds float64       `json:"seconds"`
}

// AnchorClass is one old class's line of an AnchorReport.
type AnchorClass struct {
	Class  int     `json:"class"`
	Before float64 `json:"distance_before"`
	After  float64 `json:"distance_after"`
	Spread float64 `json:"class_spread"`
}

// Drift holds the drift diagnostics after one task (paper appendix A.3):
// how far the stored prototypes of the first task's classes are from the
// statistics of those classes' test features under the current backbone
// (mean over classes), and how close the transport is to an isometry.
type Drift struct {
	MeanL2       float64 `json:"mu_l2"`
	CovFrobenius float64 `json:"sigma_frobenius"`
	SymmetricKL  float64 `json:"sym_kl"`
	// ADPercent is the fraction of singular values of A_hat D_hat in
	// [0.9, 1.1], with A_hat, D_hat least-squares maps between the old and
	// new features of this task's held-out (test) images; absent on task 1.
	ADPercent *float64 `json:"ad_percent,omitempty"`
}

// ReadSummary reads and checks the metrics.json of the run in dir. A run
// that has not finished its first task has none: the error then wraps
// fs.ErrNotExist. A corrupt or inconsistent file gives an error wrapping
// ErrInvalidRun that names it.
func ReadSummary(dir string) (Summary, error) {
	path := filepath.Join(dir, MetricsFile)
	var s Summary
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w: %w", path, ErrInvalidRun, err)
	}
	if err := s.check(); err != nil {
		return s, fmt.Errorf("%s: %w: %w", path, ErrInvalidRun, err)
	}
	return s, nil
}

// check verifies that a decoded metrics.json is complete and agrees with
// itself: its readers trust these invariants when they index.
func (s *Summary) check() error {
	if s.MatrixTAg == nil || s.MatrixTAw == nil {
		return errors.New("acc_tag or acc_taw missing")
	}
	if s.Tasks < 1 || s.Completed < 0 || s.Completed > s.Tasks {
		return fmt.Errorf("completed_tasks %d of tasks %d", s.Completed, s.Tasks)
	}
	for name, m := range map[string]interface{ Tasks() int }{"acc_tag": s.MatrixTAg, "acc_taw": s.MatrixTAw} {
		if m.Tasks() != s.Tasks {
			return fmt.Errorf("%s has %d tasks, tasks is %d", name, m.Tasks(), s.Tasks)
		}
	}
	if s.MatrixTAg.Steps() != s.Completed || s.MatrixTAw.Steps() != s.Completed || len(s.Reports) != s.Completed {
		return fmt.Errorf("completed_tasks %d, but %d acc_tag rows, %d acc_taw rows and %d reports",
			s.Completed, s.MatrixTAg.Steps(), s.MatrixTAw.Steps(), len(s.Reports))
	}
	if s.Completed > 0 && (len(s.TAg.Steps) != s.Completed || len(s.TAw.Steps) != s.Completed) {
		return fmt.Errorf("a_last_per_step has %d (tag) and %d (taw) entries, want %d", len(s.TAg.Steps), len(s.TAw.Steps), s.Completed)
	}
	for i, rep := range s.Reports {
		if rep.Drift == nil {
			continue
		}
		d := rep.Drift
		vals := []float64{d.MeanL2, d.CovFrobenius, d.SymmetricKL}
		if d.ADPercent != nil {
			vals = append(vals, *d.ADPercent)
		}
		for _, v := range vals {
			if !(v >= 0) {
				return fmt.Errorf("task %d: drift value %v is not a non-negative number", i+1, v)
			}
		}
	}
	return nil
}
