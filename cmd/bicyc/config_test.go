package main

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/config"
)

// runCLI runs the bicyc command tree with args and returns its output.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func showConfig(t *testing.T, args ...string) config.Config {
	t.Helper()
	out, err := runCLI(t, append([]string{"config", "show"}, args...)...)
	if err != nil {
		t.Fatalf("config show %v: %v", args, err)
	}
	var cfg config.Config
	if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("config show output is not YAML: %v\n%s", err, out)
	}
	return cfg
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigShowPrecedence(t *testing.T) {
	file := writeFile(t, "c.yaml", "seed: 5\ntrain:\n  epochs: 9\n  lr: 0.02\nloss:\n  lambda_cyc: 1\n")

	cfg := showConfig(t)
	if cfg.Seed != 0 || cfg.Train.Epochs != config.Default().Train.Epochs {
		t.Errorf("defaults: seed %d epochs %d", cfg.Seed, cfg.Train.Epochs)
	}

	cfg = showConfig(t, "--config", file)
	if cfg.Seed != 5 || cfg.Train.Epochs != 9 || cfg.Train.LR != 0.02 || cfg.Loss.LambdaCyc != 1 {
		t.Errorf("file: got seed %d epochs %d lr %g lambda_cyc %g", cfg.Seed, cfg.Train.Epochs, cfg.Train.LR, cfg.Loss.LambdaCyc)
	}
	if cfg.Loss.LambdaBi != 5 {
		t.Errorf("keys absent from the file keep their defaults: lambda_bi %g", cfg.Loss.LambdaBi)
	}

	t.Setenv("BICYC_TRAIN_EPOCHS", "11")
	t.Setenv("BICYC_SEED", "6")
	t.Setenv("BICYC_TRAIN_MILESTONES", "0.5,0.75")
	cfg = showConfig(t, "--config", file)
	if cfg.Train.Epochs != 11 || cfg.Seed != 6 || len(cfg.Train.Milestones) != 2 || cfg.Train.Milestones[1] != 0.75 {
		t.Errorf("env over file: epochs %d seed %d milestones %v", cfg.Train.Epochs, cfg.Seed, cfg.Train.Milestones)
	}

	// bicyc-infer's BICYC_MODEL names a model directory, not the model section.
	t.Setenv("BICYC_MODEL", "/srv/models/fmnist")
	t.Setenv("BICYC_MODEL_FEATURE_DIM", "32")
	if cfg = showConfig(t, "--config", file); cfg.Model.FeatureDim != 32 || cfg.Model.Backbone != "convnet" {
		t.Errorf("env for a section: model %+v", cfg.Model)
	}

	cfg = showConfig(t, "--config", file, "--seed", "7", "--set", "train.epochs=12", "--method", "adagauss")
	if cfg.Seed != 7 || cfg.Train.Epochs != 12 || cfg.Method != config.MethodAdaGauss {
		t.Errorf("flags over env: seed %d epochs %d method %s", cfg.Seed, cfg.Train.Epochs, cfg.Method)
	}
	if cfg.Train.LR != 0.02 {
		t.Errorf("an unset flag must not override the file: lr %g", cfg.Train.LR)
	}
}

func TestConfigQuickProfile(t *testing.T) {
	cfg := showConfig(t, "--quick")
	q := config.Default().QuickSet
	if cfg.Data.TrainPerClass != q.TrainPerClass || cfg.Train.Epochs != q.Epochs || cfg.Adapter.TransportSamples != q.TransportSamples {
		t.Errorf("quick profile not applied: %+v", cfg.Data)
	}
}

func TestConfigRejectsBadInput(t *testing.T) {
	cases := []struct {
		yaml string
		args []string
		want []string // substrings of the error
	}{
		{yaml: "trian:\n  epochs: 3\n", want: []string{"trian"}},
		{yaml: "train:\n  epoch: 3\n", want: []string{"epoch"}},
		{yaml: "train:\n  epochs: ten\n", want: []string{"train.epochs", "ten"}},
		{yaml: "train:\n  epochs: 2.5\n", want: []string{"train.epochs"}},
		{yaml: "classifier:\n  normalize: 3\n", want: []string{"classifier.normalize"}},
		{yaml: "method: sgd\n", want: []string{"method", "sgd"}},
		{yaml: "seed: [1\n", want: []string{"c.yaml"}},
		{args: []string{"--set", "loss.nope=1"}, want: []string{"loss.nope"}},
		{args: []string{"--set", "loss.alpha=abc"}, want: []string{"loss.alpha", "abc"}},
		{args: []string{"--set", "stream.class_order=[6,3"}, want: []string{"stream.class_order", "[6"}},
		// Classifier options and the accept rate: one check (gauss), NaN and ±Inf refused.
		{yaml: "classifier:\n  shrink: .nan\n", want: []string{"classifier.shrink", "NaN"}},
		{yaml: "classifier:\n  pool_cov: .inf\n", want: []string{"classifier.pool_cov", "+Inf"}},
		{args: []string{"--set", "classifier.age_bias=-Inf"}, want: []string{"classifier.age_bias", "-Inf"}},
		{args: []string{"--set", "classifier.top_k=-1"}, want: []string{"classifier.top_k"}},
		{yaml: "export:\n  accept_rate: .nan\n", want: []string{"export.accept_rate", "NaN"}},
	}
	for i, c := range cases {
		args := c.args
		if c.yaml != "" {
			args = append(args, "--config", writeFile(t, "c.yaml", c.yaml))
		}
		_, err := runCLI(t, append([]string{"config", "show"}, args...)...)
		if err == nil {
			t.Errorf("case %d: no error for %q %v", i, c.yaml, c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("case %d: error %q does not name %q", i, err, w)
			}
		}
	}
}

func TestShippedConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("configs: %v %v", files, err)
	}
	for _, f := range files {
		if _, err := runCLI(t, "config", "show", "--config", f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	cfg := showConfig(t, "--config", "../../configs/fmnist-t5-e10.yaml")
	if cfg.Train.Epochs != 10 || cfg.Train.EpochsFirst != 10 || cfg.Train.BatchSize != 128 || cfg.Adapter.TransportSamples != 2000 {
		t.Errorf("e10 comparison budget changed: %+v %+v", cfg.Train, cfg.Adapter)
	}
}

func TestKeysReferenceIsCurrent(t *testing.T) {
	got, err := os.ReadFile("../../configs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != config.Markdown() {
		t.Error("configs/README.md is stale: run `go run ./cmd/bicyc config keys --markdown > configs/README.md`")
	}
	for _, k := range config.Keys() {
		if k.Doc == "" {
			t.Errorf("config key %s has no doc tag", k.Name)
		}
	}
}

// TestSetListForms: a list given with --set or in the environment may be
// comma-separated with or without YAML's brackets.
func TestSetListForms(t *testing.T) {
	want := []int{6, 3, 9, 0, 1, 2, 4, 5, 7, 8}
	for i, args := range [][]string{
		{"--set", "stream.class_order=6,3,9,0,1,2,4,5,7,8"},
		{"--set", "stream.class_order=[6,3,9,0,1,2,4,5,7,8]"},
		{"--set", "stream.class_order=[ 6, 3, 9, 0, 1, 2, 4, 5, 7, 8 ]"},
	} {
		if got := showConfig(t, args...).Stream.ClassOrder; !slices.Equal(got, want) {
			t.Errorf("case %d %v: class order %v, want %v", i, args, got, want)
		}
	}
	if got := showConfig(t, "--set", "train.milestones=[]").Train.Milestones; len(got) != 0 {
		t.Errorf("train.milestones=[]: %v, want none", got)
	}
	t.Setenv("BICYC_STREAM_CLASS_ORDER", "[9,8,7,6,5,4,3,2,1,0]")
	if got := showConfig(t).Stream.ClassOrder; !slices.Equal(got, []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}) {
		t.Errorf("BICYC_STREAM_CLASS_ORDER=[9,...,0]: class order %v", got)
	}
}

// TestUnusedSettingsRefused: issue 42, row 4. --config and --set on a
// command that reads no configuration, and on train --resume (which keeps
// the run's own) with the flags bound to config keys, are errors naming
// them, given before any work (the run directories do not exist); a
// misspelt key is an error naming it; a stream the data cannot make names
// its keys.
func TestUnusedSettingsRefused(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-run")
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"export", "--run", missing, "--set", "classifier.shrink=0.5"}, []string{"bicyc export reads no configuration", "--set classifier.shrink=0.5", "exported with the configuration it was trained with"}},
		{[]string{"export", "--run", missing, "--set", "bogus.key=5"}, []string{"--set bogus.key=5"}},
		{[]string{"eval", "--run", missing, "-c", "/nonexistent.yaml"}, []string{"bicyc eval reads no configuration", "--config /nonexistent.yaml", "--shrink"}},
		{[]string{"report", missing, "--set", "train.epochs=3"}, []string{"bicyc report reads no configuration", "--set train.epochs=3"}},
		{[]string{"doctor", "-c", "/nonexistent.yaml"}, []string{"bicyc doctor reads no configuration", "--config /nonexistent.yaml"}},
		{[]string{"config", "keys", "--set", "seed=1"}, []string{"bicyc config keys reads no configuration"}},
		{[]string{"convert-dataset", "--layout", "cub200", missing, missing, "--set", "seed=1"}, []string{"reads no configuration"}},
		{[]string{"train", "--resume", missing, "--set", "train.epochs=3"}, []string{"train --resume continues with the configuration", "--set train.epochs=3"}},
		{[]string{"train", "--resume", missing, "--threads", "1", "--seed", "2"}, []string{"--seed, --threads would be ignored"}},
		{[]string{"train", "--resume", missing, "-c", "/nonexistent.yaml"}, []string{"--config /nonexistent.yaml"}},
		{[]string{"sweep", "--out", missing, "--status", "--set", "seed=3"}, []string{"read the plan frozen in the sweep directory", "--set seed=3"}},
		{[]string{"sweep", "--out", missing, "--cell", "0", "-c", "/nonexistent.yaml"}, []string{"--config /nonexistent.yaml"}},
		{[]string{"train", "--quick", "--run-dir", missing, "--set", "bogus.key=5"}, []string{`unknown config key "bogus.key"`}},
		{[]string{"train", "-c", "/nonexistent.yaml", "--run-dir", missing}, []string{"/nonexistent.yaml"}},
		{[]string{"train", "--quick", "--run-dir", missing, "--set", "stream.tasks=1000000"}, []string{"stream.tasks 1000000", "10 classes"}},
	}
	for i, c := range cases {
		_, err := runCLI(t, c.args...)
		if err == nil {
			t.Errorf("case %d %v: no error", i, c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("case %d %v: error %q does not name %q", i, c.args, err, w)
			}
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("%s was created", missing)
	}
}

// TestTrainRefusesLookalikeClassFolders: issue 42, row 5. Image folders
// whose class names differ only in letter case (Shirt/, shirt/) or in
// Unicode form (café in NFC and NFD), or hold a bidirectional or
// zero-width control, are refused before a run is created, every one
// named.
func TestTrainRefusesLookalikeClassFolders(t *testing.T) {
	root := t.TempDir()
	img := image.NewGray(image.Rect(0, 0, 28, 28))
	for _, split := range []string{"train", "test"} {
		for _, class := range []string{"Shirt", "shirt", "caf\u00e9", "cafe\u0301", "evil\u202egnp", "sh\u200birt"} {
			dir := filepath.Join(root, split, class)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d.png", i)))
				if err != nil {
					t.Fatal(err)
				}
				png.Encode(f, img)
				f.Close()
			}
		}
	}
	runs := filepath.Join(root, "runs")
	_, err := runCLI(t, "train", "--quick", "--run-dir", runs, "--set", "data.kind=imagefolder",
		"--set", "data.train_dir="+filepath.Join(root, "train"), "--set", "data.test_dir="+filepath.Join(root, "test"), "--set", "stream.tasks=1")
	for _, want := range []string{`"shirt": class names that look alike: it is "Shirt"`, `"café": class names that look alike: it is "café"`, "U+202E", "U+200B"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("train on lookalike folders: %v; want %q", err, want)
		}
	}
	if _, err := os.Stat(runs); err == nil {
		t.Errorf("%s was created", runs)
	}
}
