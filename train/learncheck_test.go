package train

import (
	"strings"
	"testing"

	"github.com/bicyc/bicyc/data"
)

// TestCheckLearnDataRefusesDuplicateNames checks that a new task's class
// named like one of the run's is refused unless allowed, and others pass.
func TestCheckLearnDataRefusesDuplicateNames(t *testing.T) {
	r := &Run{train: &data.Dataset{ClassNames: []string{"alpha", "beta"}}}
	labels := make([]int, 0, 2*LearnWarnImages)
	for c := range 2 {
		for range LearnWarnImages {
			labels = append(labels, c)
		}
	}
	task := &data.Dataset{Source: "new-task", ClassNames: []string{"beta", "gamma"}, Labels: labels}
	err := r.checkLearnData(task, false)
	if err == nil || !strings.Contains(err.Error(), `class name "beta": class names that look alike: it is "beta", an existing class (`) || strings.Contains(err.Error(), "gamma") {
		t.Errorf("duplicate name: got %v, want a refusal of \"beta\" alone", err)
	}
	if err := r.checkLearnData(task, true); err != nil {
		t.Errorf("duplicates allowed: got %v, want nil", err)
	}
}
