package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/internal/flagmap"
)

// flagKeys maps command-line flags to the config keys they override; only
// flags the user actually set take effect.
var flagKeys = map[string]string{
	"seed":    "seed",
	"method":  "method",
	"run-dir": "run_dir",
	"name":    "run_name",
	"threads": "threads",
	"quick":   "quick",

	"skip-unreadable": "data.skip_unreadable",
}

// messageFlags maps the names that library errors use to what a user of
// bicyc types (package flagmap): the settings of flagKeys whose names read
// as identifiers (a single word such as seed or method reads as a plain
// word in a message), and the entry points that flags reach.
func messageFlags() flagmap.Map {
	m := flagmap.Map{
		"train.Resume":                     "bicyc train --resume",
		"LearnOptions.AllowDuplicateNames": "--allow-duplicate-names",
		"Options.Wait":                     "--wait <duration>",
	}
	for flag, key := range flagKeys {
		if strings.ContainsAny(key, "._") {
			m[key] = key + " or --" + flag
		}
	}
	return m
}

// loadConfig builds the effective configuration from, in increasing
// precedence, the defaults, the config file (parsed by config.ParseFile:
// viper layers, it parses no YAML), BICYC_* environment variables, the
// bound flags of fs, and --set overrides. Unknown keys and values of the
// wrong type are errors that name the key.
func loadConfig(opts *globalOptions, fs *pflag.FlagSet) (config.Config, error) {
	return loadConfigOver(config.Default(), opts, fs)
}

// loadConfigOver is loadConfig with base in place of the defaults: a
// finished run's own configuration, for instance, which learn changes.
func loadConfigOver(base config.Config, opts *globalOptions, fs *pflag.FlagSet) (config.Config, error) {
	v := viper.New()
	setDefaults(v, reflect.ValueOf(base), "")
	// Each leaf key is bound to its own variable, rather than viper's
	// AutomaticEnv, so that a variable named after a section (BICYC_MODEL,
	// which bicyc-infer reads) is not taken for the whole section.
	for _, k := range config.Keys() {
		if err := v.BindEnv(k.Name, envName(k.Name)); err != nil {
			return config.Config{}, err
		}
	}
	if opts.configFile != "" {
		tree, err := config.ParseFile(opts.configFile)
		if err != nil {
			return config.Config{}, err
		}
		if err := v.MergeConfigMap(tree); err != nil {
			return config.Config{}, fmt.Errorf("config %s: %w", opts.configFile, err)
		}
	}
	if fs != nil {
		for flag, key := range flagKeys {
			if f := fs.Lookup(flag); f != nil {
				if err := v.BindPFlag(key, f); err != nil {
					return config.Config{}, err
				}
			}
		}
	}
	explicit := map[string]string{} // key -> how the user set it
	for _, k := range config.Keys() {
		if _, ok := os.LookupEnv(envName(k.Name)); ok {
			explicit[k.Name] = envName(k.Name)
		}
	}
	for _, s := range opts.sets {
		key, val, err := config.ParseSet(s)
		if err != nil {
			return config.Config{}, fmt.Errorf("--set %w", err)
		}
		v.Set(key, val)
		explicit[key] = "--set " + s
	}
	var cfg config.Config
	err := v.UnmarshalExact(&cfg, func(dc *mapstructure.DecoderConfig) {
		dc.WeaklyTypedInput = false
		dc.DecodeHook = strictStringHook
	})
	if err != nil {
		where := "configuration"
		if opts.configFile != "" {
			where = "config " + opts.configFile
		}
		return config.Config{}, fmt.Errorf("%s: %w", where, err)
	}
	if err := quickConflicts(cfg, explicit); err != nil {
		return config.Config{}, err
	}
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		return config.Config{}, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return cfg, nil
}

// quickConflicts refuses a key the user set explicitly (--set or a BICYC_*
// variable) that the quick profile would replace: the profile wins over
// everything (config.Resolved), so the value would be lost without a word.
// The error names the quick_profile key that sets it instead.
func quickConflicts(cfg config.Config, explicit map[string]string) error {
	if !cfg.Quick {
		return nil
	}
	var errs []error
	for key, profile := range config.QuickOverrides() {
		if how, ok := explicit[key]; ok {
			errs = append(errs, fmt.Errorf("%s: the quick profile replaces %s; set %s instead, or drop --quick", how, key, profile))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// envName is the environment variable of a config key: train.epochs is
// BICYC_TRAIN_EPOCHS.
func envName(key string) string {
	return "BICYC_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// setDefaults registers every leaf of the default config with viper.
func setDefaults(v *viper.Viper, val reflect.Value, prefix string) {
	t := val.Type()
	for i := 0; i < t.NumField(); i++ {
		key := prefix + t.Field(i).Tag.Get("mapstructure")
		if t.Field(i).Type.Kind() == reflect.Struct {
			setDefaults(v, val.Field(i), key+".")
			continue
		}
		v.SetDefault(key, val.Field(i).Interface())
	}
}

// strictStringHook parses strings (from the environment, flags and --set)
// into numbers, booleans and lists exactly, a list comma-separated with or
// without the brackets of YAML's flow form ("6,3,9" or "[6,3,9]"), and lets every
// other value through unchanged for the strict decoder to check: so
// "train.epochs: ten", "epochs: 2.5" or "normalize: 3" in a file are errors,
// not guesses.
func strictStringHook(from, to reflect.Type, data any) (any, error) {
	if f, ok := data.(float64); ok && (to.Kind() == reflect.Int || to.Kind() == reflect.Int64) && f != float64(int64(f)) {
		return nil, fmt.Errorf("%v is not an integer", f)
	}
	s, ok := data.(string)
	if !ok || from.Kind() != reflect.String {
		return data, nil
	}
	if to.Kind() == reflect.Slice {
		s = strings.TrimSpace(s)
		if inner, ok := strings.CutPrefix(s, "["); ok {
			if inner, ok = strings.CutSuffix(inner, "]"); ok {
				s = inner
			}
		}
		if strings.TrimSpace(s) == "" {
			return reflect.MakeSlice(to, 0, 0).Interface(), nil
		}
		parts := strings.Split(s, ",")
		out := reflect.MakeSlice(to, len(parts), len(parts))
		for i, p := range parts {
			e, err := parseScalar(strings.TrimSpace(p), to.Elem())
			if err != nil {
				return nil, err
			}
			out.Index(i).Set(reflect.ValueOf(e).Convert(to.Elem()))
		}
		return out.Interface(), nil
	}
	return parseScalar(s, to)
}

func parseScalar(s string, to reflect.Type) (any, error) {
	switch to.Kind() {
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return reflect.ValueOf(n).Convert(to).Interface(), nil
	case reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return f, nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean", s)
		}
		return b, nil
	}
	return s, nil
}

// configName is the base name of the config file, used for run names.
func configName(file string) string {
	if file == "" {
		return "default"
	}
	return strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
}
