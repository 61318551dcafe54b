package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"image"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/bench/compare"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/infer"
)

// addedPerClass is how many images each synthetic class is learned from,
// as in issue 34's measurement (`bicyc-infer add-classes`, 6 images each).
const addedPerClass = 6

// sweepImages is how many Fashion-MNIST test images the synthetic classes
// draw from.
const sweepImages = 10000

// parseClasses reads --classes: a comma-separated list of class counts.
func parseClasses(v string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("--classes %q: want class counts >= 1 separated by commas", v)
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// classCount is what the sweep measured for one class count.
type classCount struct {
	classes    int
	exact      bool    // measured with infer.WithExactScores
	shortlist  int     // the classes scored exactly per image, 0: all
	addSeconds float64 // add-classes from the previous count; 0 for the base model
	addedFrom  int     // the previous count
	dirBytes   int64
	p50, p99   []float64 // microseconds, per round
	throughput []float64 // img/s, per round
	cpuPerCall []float64 // CPU microseconds per batch-1 call, per round
	cpuTput    []float64 // images per CPU-second at the batch size, per round
	wall       []float64 // whole-process ms, per run
	procRSS    []float64 // whole-process peak RSS bytes, per run
	peakRSS    int64     // in-process peak RSS after opening this model
	load       [2]string
}

// runClasses is --classes: starting from the model at o.model, it grows
// one model directory per class count with author.AddClasses (each new
// class learned from addedPerClass Fashion-MNIST test images of one
// label), timing each step, and measures every directory as run measures
// one model: batch-1 p50/p99, batch throughput, whole-process
// `bicyc-infer one.png` wall time and peak RSS, the benchmark process's
// peak RSS with the model open, and the directory's size.
func runClasses(o options, out io.Writer) error {
	if o.measureOnly {
		return runShortlists(o, out)
	}
	tmp, err := workspace(&o, o.workDir, "bicyc-bench-classes-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "keeping the grown models in %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	imageDir := filepath.Join(tmp, "images")
	imgs, err := writeImages(imageDir, sweepImages, image.Point{})
	if err != nil {
		return err
	}
	labels, err := testLabels(sweepImages)
	if err != nil {
		return err
	}
	have, err := baseClasses(o)
	if err != nil {
		return err
	}
	var rows []*classCount
	var shortRows []shortlistRow
	current := o.model
	for _, k := range o.classes {
		if k < have {
			fmt.Fprintf(os.Stderr, "skipping %d classes: the base model has %d\n", k, have)
			continue
		}
		row := &classCount{classes: k, addedFrom: have}
		dir := current
		if k > have {
			dir = filepath.Join(tmp, fmt.Sprintf("model-%d", k))
			fmt.Fprintf(os.Stderr, "adding %d classes to %d\n", k-have, have)
			classes := syntheticClasses(imageDir, labels, have, k)
			if row.addSeconds, err = growModel(o, current, dir, filepath.Join(tmp, fmt.Sprintf("classes-%d", k)), classes); err != nil {
				return err
			}
		}
		counted, shortlisted, err := measureCount(o, row, dir, imgs, filepath.Join(imageDir, imageName(0)))
		if err != nil {
			return err
		}
		rows, shortRows = append(rows, counted...), append(shortRows, shortlisted...)
		current, have = dir, k
	}
	writeClasses(out, o, rows)
	if len(shortRows) > 0 {
		writeShortlist(out, shortRows)
	}
	if o.csv != "" {
		return writeClassesCSV(o.csv, rows)
	}
	return nil
}

// baseClasses loads ONNX Runtime and returns the number of classes of o.model.
func baseClasses(o options) (int, error) {
	if _, err := infer.InitRuntime(o.ortLib); err != nil {
		return 0, err
	}
	base, err := infer.Open(context.Background(), o.model, infer.WithProvider(infer.ProviderCPU), infer.WithLibraryPath(o.ortLib), infer.WithLog(io.Discard))
	if err != nil {
		return 0, err
	}
	defer base.Close()
	return len(base.Classes()), nil
}

// growModel adds classes to the model in current, writing dir: with
// o.addBin's add-classes (class folders written to folder) if set, else
// with author.AddClasses. It returns the seconds it took.
func growModel(o options, current, dir, folder string, classes []author.LabelledImages) (float64, error) {
	start := time.Now()
	var err error
	if o.addBin != "" {
		err = addWithBinary(o.addBin, current, dir, folder, classes)
	} else {
		_, err = author.AddClasses(context.Background(), current, dir, classes, infer.WithProvider(infer.ProviderCPU), infer.WithThreads(o.threads),
			infer.WithLibraryPath(o.ortLib), infer.WithLog(io.Discard))
	}
	return time.Since(start).Seconds(), err
}

// measureCount measures the model in dir (row, then the exact scores
// where row used the shortlist, then each of o.shortlist's lengths).
func measureCount(o options, row *classCount, dir string, imgs []image.Image, one string) ([]*classCount, []shortlistRow, error) {
	k := row.classes
	if err := row.measure(o, dir, imgs, one); err != nil {
		return nil, nil, fmt.Errorf("%d classes: %w", k, err)
	}
	rows := []*classCount{row}
	if row.shortlist > 0 && !o.exactScores {
		exact := &classCount{classes: k, exact: true}
		if err := exact.measure(o, dir, imgs, one); err != nil {
			return nil, nil, fmt.Errorf("%d classes, exact scores: %w", k, err)
		}
		rows = append(rows, exact)
	}
	var shortRows []shortlistRow
	for _, n := range o.shortlist {
		if k < classgraph.ExpandedMinClasses {
			break
		}
		r, err := measureShortlist(o, dir, imgs, n)
		if err != nil {
			return nil, nil, fmt.Errorf("%d classes, shortlist %d: %w", k, n, err)
		}
		shortRows = append(shortRows, r)
	}
	return rows, shortRows, nil
}

// addWithBinary adds classes to the model current with another
// bicyc-infer's add-classes command (for example one built from an older
// commit, to measure its model format), from a folder of one sub-folder per
// class holding hard links to the class's images (linking is timed with
// the command; it is cheap next to embedding).
func addWithBinary(bin, current, out, folder string, classes []author.LabelledImages) error {
	for _, c := range classes {
		sub := filepath.Join(folder, c.Name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		for _, f := range c.Files {
			if err := os.Link(f, filepath.Join(sub, filepath.Base(f))); err != nil {
				return err
			}
		}
	}
	cmd := exec.Command(bin, "add-classes", "--model", current, "--from", folder, "--out", out)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s add-classes: %w", bin, err)
	}
	return os.RemoveAll(folder)
}

// testLabels returns the labels of the first n Fashion-MNIST test images.
func testLabels(n int) ([]int, error) {
	_, test, err := data.LoadFashionMNIST("")
	if err != nil {
		return nil, err
	}
	return test.Labels[:n], nil
}

// syntheticClasses returns classes have..k-1, named "synthetic-%05d"; class
// j is learned from addedPerClass test images of label j mod 10 drawn by a
// generator seeded with j, so every count's model is reproducible.
func syntheticClasses(imageDir string, labels []int, have, k int) []author.LabelledImages {
	byLabel := make([][]int, 10)
	for i, l := range labels {
		byLabel[l] = append(byLabel[l], i)
	}
	out := make([]author.LabelledImages, 0, k-have)
	for j := have; j < k; j++ {
		rng := rand.New(rand.NewPCG(uint64(j), 34))
		pool := byLabel[j%10]
		class := author.LabelledImages{Name: fmt.Sprintf("synthetic-%05d", j)}
		for _, p := range rng.Perm(len(pool))[:addedPerClass] {
			class.Files = append(class.Files, filepath.Join(imageDir, imageName(pool[p])))
		}
		out = append(out, class)
	}
	return out
}

// measure opens dir and runs o.rounds rounds and o.procs whole processes.
func (r *classCount) measure(o options, dir string, imgs []image.Image, one string) error {
	var err error
	if r.load[0], err = compare.LoadAverage(); err != nil {
		return err
	}
	if r.dirBytes, err = dirSize(dir); err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	if err := compare.ResetPeakRSS(); err != nil {
		return err
	}
	exact := r.exact || o.exactScores
	c, err := infer.Open(context.Background(), dir, infer.WithProvider(infer.ProviderCPU), infer.WithThreads(o.threads),
		infer.WithLibraryPath(o.ortLib), infer.WithLog(io.Discard), infer.WithExactScores(exact))
	if err != nil {
		return err
	}
	r.exact, r.shortlist = exact, c.ShortlistSize()
	s := &side{}
	for round := range o.rounds {
		fmt.Fprintf(os.Stderr, "%d classes: round %d/%d\n", r.classes, round+1, o.rounds)
		if err := s.measure(c, imgs, o); err != nil {
			c.Close()
			return err
		}
	}
	r.p50, r.p99, r.throughput, r.cpuPerCall, r.cpuTput = s.p50, s.p99, s.throughput, s.cpuPerCall, s.cpuThroughput
	r.peakRSS, err = compare.PeakRSS()
	c.Close()
	if err != nil {
		return err
	}
	for range o.procs {
		if err := s.runProcess(o.bin, one, "--model", dir, "--threads", fmt.Sprint(o.threads), fmt.Sprintf("--exact-scores=%t", exact)); err != nil {
			return err
		}
	}
	r.wall, r.procRSS = s.wall, s.procRSS
	r.load[1], err = compare.LoadAverage()
	return err
}

// dirSize is the total size of the regular files in dir.
func dirSize(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return 0, err
		}
		if info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n, nil
}

func writeClasses(out io.Writer, o options, rows []*classCount) {
	fmt.Fprintf(out, "# bicyc inference by class count (%d intra-op thread(s), batch %d, %d rounds, %d processes; medians)\n\n",
		o.threads, o.batch, o.rounds, o.procs)
	t := compare.Table{Header: []string{"classes", "scores", "p50 batch 1 (us)", "p99 batch 1 (us)", "CPU per batch-1 call (us)",
		fmt.Sprintf("batch %d (img/s)", o.batch), fmt.Sprintf("batch %d (img per CPU-s)", o.batch), "bicyc-infer one.png (ms)", "process peak RSS (MB)", "in-process peak RSS (MB)", "directory (MB)", "KB per added class",
		"add-classes (s)", "load before / after"}}
	var prev *classCount
	for _, r := range rows {
		perClass, add := "-", "-"
		if prev != nil && r.classes > prev.classes {
			perClass = fmt.Sprintf("%.1f", float64(r.dirBytes-prev.dirBytes)/float64(r.classes-prev.classes)/1e3)
		}
		prev = r
		if r.addSeconds > 0 {
			add = fmt.Sprintf("%.1f (%d -> %d)", r.addSeconds, r.addedFrom, r.classes)
		}
		t.Add(fmt.Sprint(r.classes), scoresMode(r), fmt.Sprintf("%.0f", compare.Median(r.p50)), fmt.Sprintf("%.0f", compare.Median(r.p99)),
			fmt.Sprintf("%.0f", compare.Median(r.cpuPerCall)), fmt.Sprintf("%.0f", compare.Median(r.throughput)),
			fmt.Sprintf("%.0f", compare.Median(r.cpuTput)), fmt.Sprintf("%.0f", compare.Median(r.wall)),
			fmt.Sprintf("%.0f", compare.Median(r.procRSS)/1e6), fmt.Sprintf("%.0f", compare.MB(r.peakRSS)),
			fmt.Sprintf("%.1f", compare.MB(r.dirBytes)), perClass, add, r.load[0]+" / "+r.load[1])
	}
	t.Write(out)
}

// scoresMode says how a row's model scored: "exact" (every class) or
// "shortlist N".
func scoresMode(r *classCount) string {
	if r.shortlist > 0 {
		return fmt.Sprintf("shortlist %d", r.shortlist)
	}
	return "exact"
}

func writeClassesCSV(path string, rows []*classCount) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"classes", "shortlist", "exact_scores", "p50_us", "p99_us", "cpu_us_per_call", "throughput_img_s", "throughput_img_per_cpu_s", "process_ms", "process_peak_rss_bytes",
		"inprocess_peak_rss_bytes", "dir_bytes", "add_seconds", "added_from", "load_before", "load_after"})
	for _, r := range rows {
		w.Write([]string{fmt.Sprint(r.classes), fmt.Sprint(r.shortlist), fmt.Sprint(r.exact), fmt.Sprint(compare.Median(r.p50)), fmt.Sprint(compare.Median(r.p99)),
			fmt.Sprint(compare.Median(r.cpuPerCall)), fmt.Sprint(compare.Median(r.throughput)), fmt.Sprint(compare.Median(r.cpuTput)), fmt.Sprint(compare.Median(r.wall)), fmt.Sprint(compare.Median(r.procRSS)),
			fmt.Sprint(r.peakRSS), fmt.Sprint(r.dirBytes), fmt.Sprint(r.addSeconds), fmt.Sprint(r.addedFrom), r.load[0], r.load[1]})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runShortlists is --shortlist-only: o.model is a folder kept by --keep,
// holding model-K for each K of --classes (and images/).
func runShortlists(o options, out io.Writer) error {
	if len(o.shortlist) == 0 {
		return fmt.Errorf("--shortlist-only needs --shortlist")
	}
	imgs, err := writeImages(filepath.Join(o.model, "images"), sweepImages, image.Point{})
	if err != nil {
		return err
	}
	if _, err := infer.InitRuntime(o.ortLib); err != nil {
		return err
	}
	var rows []shortlistRow
	for _, k := range o.classes {
		if k < classgraph.ExpandedMinClasses {
			continue
		}
		for _, n := range o.shortlist {
			r, err := measureShortlist(o, filepath.Join(o.model, fmt.Sprintf("model-%d", k)), imgs, n)
			if err != nil {
				return fmt.Errorf("%d classes, shortlist %d: %w", k, n, err)
			}
			rows = append(rows, r)
		}
	}
	writeShortlist(out, rows)
	return nil
}
