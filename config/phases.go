package config

import (
	"slices"
	"strings"
)

// Which keys act in which part of a run: the rule by which train.Fork,
// train.Rescore and train.Learn accept a configuration that differs from
// their source run's, and by which a sweep plans its cells (package sweep)
// without linking the trainer.

// LaterTaskKeys are the configuration keys that play no part in task 1.
// Task 1 trains the backbone and a head on CE, rotation and L_ac alone,
// evaluates and stores the first prototypes; the method, the distillation
// losses, the mappers, Stage II, transport and the later tasks' epochs and
// learning rate only act from task 2 on. Runs whose configurations differ
// in these keys alone therefore have the same first task (train.Fork).
var LaterTaskKeys = []string{
	"method", "run_dir", "run_name", "threads", "train.device",
	"model.mapper", "model.hidden_mult",
	"train.epochs", "train.lr", "train.min_steps", "train.freeze_bn_stats",
	"loss.bi", "loss.cyc", "loss.pair", "loss.lambda_bi", "loss.lambda_cyc", "loss.lambda_pair",
	"loss.pair_rows", "loss.kd_weight", "loss.cycle_detach_inner",
	"loss.rehearsal.enabled", "loss.rehearsal.lambda", "loss.rehearsal.per_class", "loss.rehearsal.backbone",
	"adapter.epochs", "adapter.lr", "adapter.transport_samples", "adapter.alpha", "adapter.min_steps", "adapter.select", "adapter.ensemble",
	"classifier.age_shrink", "classifier.age_bias",
	"anchors.per_class", "anchors.steps", "anchors.step", "anchors.start", "anchors.mean_shift",
	"export.enabled", "export.dir",
	"model.linear_bias", "loss.pair_sampling", "adapter.adagauss_epochs", "adapter.milestones",
	"quick_profile.epochs", "quick_profile.transport_samples", "quick_profile.adapter_epochs",
}

// ClassifierKeys are the classifier.* keys (every key of gauss.ClassifierOptions):
// they act only when a task is evaluated, never on what it trains. Runs that
// differ in them (and in LaterTaskKeys) share their first task; train.Fork
// evaluates it again with the new run's classifier.
var ClassifierKeys = classifierKeys()

func classifierKeys() []string {
	var keys []string
	for _, k := range Keys() {
		if strings.HasPrefix(k.Name, "classifier.") {
			keys = append(keys, k.Name)
		}
	}
	return keys
}

// FirstTaskDifferences lists the keys outside LaterTaskKeys and
// ClassifierKeys in which a and b differ: the reasons two runs cannot share
// their first task.
func FirstTaskDifferences(a, b Config) []string {
	return DifferencesOutside(a, b, slices.Concat(LaterTaskKeys, ClassifierKeys))
}

// DifferencesOutside lists the keys not in allowed in which a and b differ.
func DifferencesOutside(a, b Config, allowed []string) []string {
	var keys []string
	for _, c := range Diff(a, b) {
		if !slices.Contains(allowed, c.Key) {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// RescoreDifferences lists the keys in which a and b differ other than
// ClassifierKeys and those that do not change what a run computes (its name
// and directory, threads, export.*): the reasons a run of b cannot be
// rescored from a run of a.
func RescoreDifferences(a, b Config) []string {
	return DifferencesOutside(a, b, slices.Concat(ClassifierKeys, bookkeepingKeys))
}

// bookkeepingKeys change where a run is and what it writes at its end, not
// what it trains or measures.
var bookkeepingKeys = []string{"run_dir", "run_name", "threads", "export.enabled", "export.dir", "export.accept_rate"}
