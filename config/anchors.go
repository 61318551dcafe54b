package config

// Anchor start sources (anchors.start).
const (
	// AnchorStartNearest starts each old class's anchor search from the
	// current task's images whose old features lie nearest its mean (ADC).
	AnchorStartNearest = "nearest"
	// AnchorStartRandom starts it from current images drawn at random.
	AnchorStartRandom = "random"
)

// Anchors holds the drift anchors of Stage II (docs/method.md, "Drift
// anchors"): current-task images pushed through the old backbone toward
// each old class mean, whose feature pairs join the data the adapter and
// the linear transport map are fitted on (ADC, Goswami et al., CVPR 2024).
type Anchors struct {
	PerClass  int     `mapstructure:"per_class" yaml:"per_class" doc:"Drift anchors per old class added to the Stage II fit of A and of the linear transport map (ADC); 0 turns drift anchors off. Exemplar-free: anchors are made from the current task's images."`
	Steps     int     `mapstructure:"steps" yaml:"steps" doc:"Signed-gradient steps that push each anchor through the old backbone toward its old class mean (ADC's code: 3)."`
	Step      float64 `mapstructure:"step" yaml:"step" doc:"Size of one anchor step as a fraction of the pixel range [0,1] (divided by each channel's std in normalised input units); anchors stay inside the valid input range."`
	Start     string  `mapstructure:"start" yaml:"start" doc:"Current images the anchor search starts from: nearest (those whose old features are nearest the class mean, as ADC) or random."`
	MeanShift bool    `mapstructure:"mean_shift" yaml:"mean_shift" doc:"Also set each old class's transported mean to its stored mean plus the anchors' mean drift f_t(x) - f_{t-1}(x) (ADC's compensation); the covariance stays the transported one."`
}

// validate checks the anchors.* keys.
func (a Anchors) validate(bad problem) {
	if a.PerClass < 0 {
		bad("anchors.per_class", "must be >= 0 (0 is off), got %d", a.PerClass)
	}
	if a.Steps < 0 {
		bad("anchors.steps", "must be >= 0, got %d", a.Steps)
	}
	if !(a.Step >= 0 && a.Step <= 1) {
		bad("anchors.step", "must be in [0, 1] (a fraction of the pixel range), got %g", a.Step)
	}
	if a.Start != AnchorStartNearest && a.Start != AnchorStartRandom {
		bad("anchors.start", "%q is not one of nearest, random", a.Start)
	}
}
