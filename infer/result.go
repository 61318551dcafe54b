package infer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/bicyc/bicyc/bundle"
)

// Prediction is one class ranked for one image.
type Prediction struct {
	// ClassID is the dataset's class label (bundle.Class.ID).
	ClassID int `json:"class_id"`
	// Name is the class name; it may be empty.
	Name string `json:"name"`
	// Task is the task in which the class was learnt, numbered from 1 as
	// everywhere bicyc shows tasks (bundle.Class.Task).
	Task int `json:"task"`
	// Distance is the squared Mahalanobis distance from the image's feature z
	// to the class prototype (docs/method.md, "Classifier"); smaller is closer:
	//
	//	d_c(z) = (z - mu_c)^T Sigma'_c^-1 (z - mu_c)
	//
	// With the bundle's full-Gaussian option it also holds log det Sigma'_c
	// and -2 log prior_c, and can be negative. With the softmax head it is
	// the head's negative logit plus a term the same for every class, plus
	// gaussian_weight times d_c(z) (gauss.ClassifierOptions.GaussianWeight). With the bundle's test_flip it
	// is the mean of the image's and its horizontal mirror's.
	Distance float32 `json:"distance"`
	// Probability is the calibrated posterior p(class | image) (see
	// gauss.Calibration); 0 and omitted when the model has no calibration.
	Probability float64 `json:"probability,omitempty"`
}

// Result is the classification of one image.
type Result struct {
	// Predictions are the top-k classes, closest first; equal distances are
	// ordered by score column (class index), lowest first.
	Predictions []Prediction `json:"predictions"`
	// Confidence is the best class's Probability; 0 and omitted when the
	// model has no calibration.
	Confidence float64 `json:"confidence,omitempty"`
	// UnknownScore measures how unlike every class the image is, larger
	// meaning more likely unknown, by the score UnknownScoreName names
	// (gauss.UnknownScore has the formulas): by default on a model
	// calibrated before scores could be chosen, the smallest squared
	// Mahalanobis distance divided by each class's typical held-out distance
	// (so about 1 is a typical image of a known class); on a model without
	// calibration, the smallest squared Mahalanobis distance.
	UnknownScore float64 `json:"unknown_score"`
	// UnknownScoreName names the score UnknownScore holds
	// (Classifier.UnknownScore, chosen with WithUnknownScore).
	UnknownScoreName string `json:"unknown_score_name"`
	// Unknown reports that UnknownScore exceeds the Classifier's
	// threshold (UnknownThreshold): the image is probably of none of the
	// known classes, and Predictions name the nearest ones only. Always
	// false for a model without calibration unless a threshold was set.
	Unknown bool `json:"unknown"`
}

// Best returns the closest class. It panics on an empty Result, which
// Classify never returns.
func (r Result) Best() Prediction {
	if len(r.Predictions) == 0 {
		panic("infer: Best of an empty Result")
	}
	return r.Predictions[0]
}

// rankClasses returns the k classes with the smallest distances, closest
// first, ties by class index. A NaN or infinite distance is an error (a
// broken model or input), never a silent rank.
func rankClasses(distances []float32, classes []bundle.Class, k int) ([]Prediction, error) {
	if err := checkDistances(distances, classes); err != nil {
		return nil, err
	}
	return predictions(rankIndices(distances, k), distances, classes), nil
}

// predictions are the classes of order, closest first, with their
// distances.
func predictions(order []int, distances []float32, classes []bundle.Class) []Prediction {
	out := make([]Prediction, len(order))
	for r, i := range order {
		out[r] = Prediction{ClassID: classes[i].ID, Name: classes[i].Name, Task: classes[i].Task, Distance: distances[i]}
	}
	return out
}

// rankIndices returns the indices of the min(k, len(distances)) smallest
// distances, smallest first, ties by index.
func rankIndices(distances []float32, k int) []int {
	k = min(k, len(distances))
	if 4*k >= len(distances) {
		// Most of them (a server's full score table): one stable sort,
		// where the selection below would be quadratic in k.
		order := make([]int, len(distances))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(distances[a], distances[b]) })
		return order[:k]
	}
	// Selection into a sorted buffer of k, not a sort of all K: with
	// thousands of classes sorting every score per image cost more than the
	// classifier. Classes are visited in index order and a class enters only
	// strictly before an equal distance, so ties keep the lower index first.
	order := make([]int, 0, k)
	for i, d := range distances {
		if len(order) == k && d >= distances[order[k-1]] {
			continue
		}
		at := sort.Search(len(order), func(j int) bool { return distances[order[j]] > d })
		if len(order) < k {
			order = append(order, 0)
		}
		copy(order[at+1:], order[at:len(order)-1])
		order[at] = i
	}
	return order
}

// checkDistances reports the first NaN or infinite distance, naming its
// class and wrapping ErrNonFinite.
func checkDistances(distances []float32, classes []bundle.Class) error {
	for i, d := range distances {
		if math.IsNaN(float64(d)) || math.IsInf(float64(d), 0) {
			return fmt.Errorf("%w: distance to class %d (%q) is %v", ErrNonFinite, classes[i].ID, classes[i].Name, d)
		}
	}
	return nil
}

// rankShortlist ranks one image's classes under a shortlist: first the
// shortlisted columns by their exact distances, then, when k asks for
// more, the others by their approximate ones (each at least the farthest
// shortlisted distance, so the order holds across the two), ties by class
// index within each. Every distance must be finite.
func rankShortlist(distances []float32, shortlisted []int64, classes []bundle.Class, k int) ([]Prediction, error) {
	if err := checkDistances(distances, classes); err != nil {
		return nil, err
	}
	k = min(k, len(distances))
	cols := slices.Clone(shortlisted)
	slices.Sort(cols)
	sub := make([]float32, len(cols))
	for j, col := range cols {
		sub[j] = distances[col]
	}
	order := make([]int, 0, k)
	for _, j := range rankIndices(sub, k) {
		order = append(order, int(cols[j]))
	}
	if rest := k - len(order); rest > 0 {
		others := make([]int, 0, len(distances)-len(cols))
		for c := range distances {
			if _, found := slices.BinarySearch(cols, int64(c)); !found {
				others = append(others, c)
			}
		}
		far := make([]float32, len(others))
		for j, c := range others {
			far[j] = distances[c]
		}
		for _, j := range rankIndices(far, rest) {
			order = append(order, others[j])
		}
	}
	return predictions(order, distances, classes), nil
}
