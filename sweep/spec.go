package sweep

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/config"
)

// ErrInvalidSpec is wrapped by every error about a sweep definition.
var ErrInvalidSpec = errors.New("invalid sweep definition")

// Spec is a sweep definition, the YAML of configs/sweeps/:
//
//	config: ../fmnist-t5-e10.yaml   # relative to the sweep file
//	out: runs/sweeps/fmnist-t5-e10  # relative to the working directory
//	seeds: 3                        # seeds 0, 1, 2
//	methods: [bicyc, adagauss, finetune]
//	ablation: true                  # bicyc with loss.bi x loss.cyc on/off
//	sets: [eval.drift=true]         # --set overrides of every run
//	variants:                       # named settings compared with the methods
//	  - name: n10000
//	    method: bicyc
//	    sets: [adapter.transport_samples=10000]
//	selection:                      # how the report chooses on validation
//	  forgetting_limit: bicyc       # no more forgetting than plain bicyc
//
// Every run gets the config file, then sets, then its own method, seed,
// (variant) the variant's sets and (ablation) loss.bi, loss.cyc.
type Spec struct {
	Config   string          `yaml:"config" json:"config"`
	Out      string          `yaml:"out" json:"out"`
	Seeds    int             `yaml:"seeds" json:"seeds"`
	Methods  []config.Method `yaml:"methods" json:"methods"`
	Ablation bool            `yaml:"ablation" json:"ablation"`
	Sets     []string        `yaml:"sets" json:"sets"`
	Variants []NamedVariant  `yaml:"variants,omitempty" json:"variants,omitempty"`
	// Selection constrains the variant `bicyc report` selects on the
	// validation split.
	Selection Selection `yaml:"selection,omitempty" json:"selection,omitzero"`
}

// Selection is how `bicyc report` chooses a variant on the validation split.
// Without a limit it takes the highest mean validation A_last.
type Selection struct {
	// ForgettingLimit names a method or named variant as the report shows
	// it ("bicyc", "adagauss+cal"): only variants whose mean validation
	// F_last is not above its own can be selected, so that a variant cannot
	// win on accuracy bought with more forgetting. Empty: no limit.
	ForgettingLimit string `yaml:"forgetting_limit,omitempty" json:"forgetting_limit,omitempty"`
}

// NamedVariant is a method with extra settings, compared in a sweep like
// a method of its own (for example an extension switched on). Its runs are
// <method>-<name>-s<seed>; the report shows it as <method>+<name>.
type NamedVariant struct {
	// Name is lower-case letters, digits and '-', unique among the
	// sweep's variants of its method (the same settings may be named alike
	// for two methods).
	Name   string        `yaml:"name" json:"name"`
	Method config.Method `yaml:"method" json:"method"`
	// Sets are --set overrides applied after the sweep's own.
	Sets []string `yaml:"sets" json:"sets"`
}

// ReadSpec reads a sweep definition strictly (unknown keys are errors) and
// makes its config path relative to the sweep file's directory usable from
// the working directory. It does not validate: see Spec.Validate.
func ReadSpec(path string) (Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return Spec{}, err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty file")
		}
		return Spec{}, fmt.Errorf("sweep %s: %w: %w", path, ErrInvalidSpec, err)
	}
	if s.Config != "" && !filepath.IsAbs(s.Config) {
		s.Config = filepath.Join(filepath.Dir(path), s.Config)
	}
	return s, nil
}

// sweepKeys are the config keys a sweep sets per run; sets must leave them
// alone. loss.bi and loss.cyc join them when the ablation grid is on.
var sweepKeys = []string{"seed", "method", "run_dir", "run_name", "export.dir"}

// Validate reports every problem of s at once, each naming its key.
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...)))
	}
	if s.Config == "" {
		bad("config: no config file")
	}
	if s.Out == "" {
		bad("out: no output directory")
	}
	if s.Seeds < 1 {
		bad("seeds: must be >= 1, got %d", s.Seeds)
	}
	if len(s.Methods) == 0 && !s.Ablation && len(s.Variants) == 0 {
		bad("methods: none, no variants and no ablation")
	}
	for i, m := range s.Methods {
		if !slices.Contains(config.Methods(), m) {
			bad("methods: %q is not one of %s", m, methodNames())
		}
		if slices.Index(s.Methods, m) != i {
			bad("methods: %q listed twice", m)
		}
	}
	reserved := sweepKeys
	if s.Ablation {
		reserved = append(slices.Clip(reserved), "loss.bi", "loss.cyc")
	}
	checkSets("sets", s.Sets, reserved, bad)
	for i, v := range s.Variants {
		field := fmt.Sprintf("variants[%d]", i)
		if !validVariantName(v.Name) {
			bad("%s.name: %q: want lower-case letters, digits and '-', not an ablation tag", field, v.Name)
		}
		if slices.IndexFunc(s.Variants, func(w NamedVariant) bool { return w.Name == v.Name && w.Method == v.Method }) != i {
			bad("%s.name: %q listed twice for %s", field, v.Name, v.Method)
		}
		if !slices.Contains(config.Methods(), v.Method) {
			bad("%s.method: %q is not one of %s", field, v.Method, methodNames())
		}
		checkSets(field+".sets", v.Sets, reserved, bad)
	}
	if l := s.Selection.ForgettingLimit; l != "" && !slices.Contains(s.shownNames(), l) {
		bad("selection.forgetting_limit: %q is none of the sweep's methods and variants (%s)", l, strings.Join(s.shownNames(), ", "))
	}
	return errors.Join(errs...)
}

// shownNames returns the names the report gives the sweep's methods and
// named variants (Variant.String), in the sweep's order.
func (s Spec) shownNames() []string {
	var names []string
	for _, m := range s.Methods {
		names = append(names, string(m))
	}
	for _, v := range s.Variants {
		names = append(names, Variant{Method: v.Method, Name: v.Name, Bi: true, Cyc: true}.String())
	}
	return names
}

// checkSets reports every entry of sets that is not key=value of a
// configuration key (config.ParseSet) or sets a reserved key.
func checkSets(field string, sets, reserved []string, bad func(format string, args ...any)) {
	for _, kv := range sets {
		key, _, err := config.ParseSet(kv)
		if err != nil {
			bad("%s: %v", field, err)
			continue
		}
		if slices.Contains(reserved, key) {
			bad("%s: %q: the sweep sets %s itself", field, kv, key)
		}
	}
}

// validVariantName reports whether name can be a variant's name: a run
// directory part that no ablation tag or seed suffix can be confused with.
func validVariantName(name string) bool {
	if name == "" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		return false
	}
	for _, tag := range []string{"nobi", "nocyc", "nobi-nocyc"} {
		if name == tag {
			return false
		}
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return !(name[0] == 's' && len(name) > 1 && strings.Trim(name[1:], "0123456789") == "")
}

// PlannedRun is one run of a sweep.
type PlannedRun struct {
	// Name is the run directory's name: <method>[-<variant>][-<ablation tag>]-s<seed>.
	Name    string
	Variant Variant
	Seed    int64
	// VariantSets are the named variant's overrides, nil for a method.
	VariantSets []string
}

// Sets returns the overrides that make the sweep's configuration this
// run's: method, seed, a named variant's sets, and loss.bi and loss.cyc
// for bicyc in an ablation.
func (p PlannedRun) Sets(ablation bool) []string {
	s := []string{"method=" + string(p.Variant.Method), "seed=" + strconv.FormatInt(p.Seed, 10)}
	s = append(s, p.VariantSets...)
	if ablation && p.Variant.Name == "" && p.Variant.Method == config.MethodBicyc {
		s = append(s, "loss.bi="+strconv.FormatBool(p.Variant.Bi), "loss.cyc="+strconv.FormatBool(p.Variant.Cyc))
	}
	return s
}

// ablationGrid are the bicyc variants of the L_bi x L_cyc ablation, the
// full method first.
var ablationGrid = []Variant{
	{Method: config.MethodBicyc, Bi: true, Cyc: true}, {Method: config.MethodBicyc, Bi: false, Cyc: true},
	{Method: config.MethodBicyc, Bi: true, Cyc: false}, {Method: config.MethodBicyc, Bi: false, Cyc: false},
}

// methodNames lists the methods for messages: "bicyc, adagauss, finetune".
func methodNames() string {
	var names []string
	for _, m := range config.Methods() {
		names = append(names, string(m))
	}
	return strings.Join(names, ", ")
}

// Plan lists the runs of s in the order a sweep runs them: for every seed,
// each method, then each named variant, then, with the ablation on, for every seed the bicyc runs
// with L_bi and/or L_cyc switched off (the full bicyc run is the grid's
// on/on cell and runs once).
func (s Spec) Plan() []PlannedRun {
	var plan []PlannedRun
	add := func(v Variant, seed int64, sets []string) {
		p := PlannedRun{Name: v.RunName(seed), Variant: v, Seed: seed, VariantSets: sets}
		for _, q := range plan {
			if q.Name == p.Name {
				return
			}
		}
		plan = append(plan, p)
	}
	for seed := range int64(s.Seeds) {
		for _, m := range s.Methods {
			add(Variant{Method: m, Bi: true, Cyc: true}, seed, nil)
		}
		for _, nv := range s.Variants {
			add(Variant{Method: nv.Method, Name: nv.Name, Bi: true, Cyc: true}, seed, nv.Sets)
		}
	}
	if s.Ablation {
		for seed := range int64(s.Seeds) {
			for _, v := range ablationGrid {
				add(v, seed, nil)
			}
		}
	}
	return plan
}

// Configs returns the resolved configuration of every run of s.Plan(), in
// plan order, built by configure from s.Sets, the run's own sets (see
// PlannedRun.Sets), run_dir = s.Out and run_name = the run's name. A
// configuration that contradicts the plan (another variant, or an
// export.dir that every run would share) is an error wrapping
// ErrInvalidSpec.
func (s Spec) Configs(configure Configure) ([]config.Config, error) {
	plan := s.Plan()
	configs := make([]config.Config, len(plan))
	for i, p := range plan {
		sets := append(slices.Clip(s.Sets), p.Sets(s.Ablation)...)
		sets = append(sets, "run_dir="+s.Out, "run_name="+p.Name)
		cfg, err := configure(sets)
		if err != nil {
			return nil, fmt.Errorf("sweep run %s: %w", p.Name, err)
		}
		if cfg.Export.Dir != "" {
			return nil, fmt.Errorf("sweep run %s: %w: export.dir %q would give every run the same model directory",
				p.Name, ErrInvalidSpec, cfg.Export.Dir)
		}
		v := VariantOf(cfg)
		v.Name = p.Variant.Name
		if v != p.Variant {
			return nil, fmt.Errorf("sweep run %s: %w: the configuration makes it %s", p.Name, ErrInvalidSpec, v)
		}
		configs[i] = cfg
	}
	return configs, nil
}

// Configure builds the resolved configuration of a run from --set style
// overrides applied on top of the sweep's config file. The command line
// supplies it, so that a sweep reads configs exactly as `bicyc train` does.
type Configure func(sets []string) (config.Config, error)

// Variant is what a run compares: its method and, for bicyc, which of the
// two losses under ablation (docs/method.md, "Stage I"; paper Table "Contributions of L_bi
// and L_cyc") were on. Runs of one variant differ only in the seed.
type Variant struct {
	Method config.Method `json:"method"`
	// Name is a named variant's (NamedVariant), "" for a method as
	// configured.
	Name string `json:"name,omitempty"`
	// Bi and Cyc are loss.bi and loss.cyc; both true unless Method is bicyc
	// with a loss switched off, since only bicyc uses them.
	Bi  bool `json:"loss_bi"`
	Cyc bool `json:"loss_cyc"`
}

// VariantOf returns the variant of a run configured by c; a named
// variant's name is not part of a configuration (see RunRecord.Variant).
func VariantOf(c config.Config) Variant {
	if c.Method != config.MethodBicyc {
		return Variant{Method: c.Method, Bi: true, Cyc: true}
	}
	return Variant{Method: c.Method, Bi: c.Loss.Bi, Cyc: c.Loss.Cyc}
}

// Ablated reports whether a loss of bicyc is switched off.
func (v Variant) Ablated() bool { return !v.Bi || !v.Cyc }

// Tag is the suffix of the variant's run directories: "", "nobi", "nocyc"
// or "nobi-nocyc".
func (v Variant) Tag() string { return strings.Join(v.off("nobi", "nocyc"), "-") }

// off returns bi and cyc, in that order, for the losses switched off.
func (v Variant) off(bi, cyc string) []string {
	var names []string
	if !v.Bi {
		names = append(names, bi)
	}
	if !v.Cyc {
		names = append(names, cyc)
	}
	return names
}

// RunName is the name a sweep gives the variant's run of a seed:
// <method>[-<variant name>][-<ablation tag>]-s<seed>.
func (v Variant) RunName(seed int64) string {
	name := string(v.Method)
	if v.Name != "" {
		name += "-" + v.Name
	}
	if tag := v.Tag(); tag != "" {
		name += "-" + tag
	}
	return name + "-s" + strconv.FormatInt(seed, 10)
}

// String is the variant's name in tables and legends, e.g. "bicyc",
// "bicyc+n10000" or "bicyc w/o L_bi, L_cyc".
func (v Variant) String() string {
	name := string(v.Method)
	if v.Name != "" {
		name += "+" + v.Name
	}
	if off := v.off("L_bi", "L_cyc"); len(off) > 0 {
		name += " w/o " + strings.Join(off, ", ")
	}
	return name
}
