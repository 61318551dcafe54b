package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/internal/servetest"
)

// TestInboxKeepsCollecting: issue 33, row 3, with the real server. serve
// --collect-unknown inbox --collect-max-files 30 with every answer unknown:
// fill the inbox, move 10 files out (the labelling step), and collection
// resumes without a restart; a reload counts the folder again too; files
// another process writes count toward the limit; the metric counts a
// file written as saved, a repeat as duplicate, a refusal as full, and the
// first refusal is logged.
func TestInboxKeepsCollecting(t *testing.T) {
	model, test := testModel(t)
	bin := buildBinary(t)
	root := t.TempDir()
	inbox, labelled := filepath.Join(root, "inbox"), filepath.Join(root, "labelled")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(labelled, 0o755))
	s := startServer(t, bin, model, "--threshold", "1e-9", "--collect-unknown", inbox, "--collect-max-files", "30")
	defer func() {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}()
	next := 0
	send := func(n int) {
		t.Helper()
		for range n {
			if code, res := servetest.ClassifyPNG(t, s.url, encodePNG(t, fashionImage(test, next))); code != 200 || !res.Unknown {
				t.Fatalf("image %d: %d %+v", next, code, res)
			}
			next++
		}
	}
	count := func() int { return countEntries(t, inbox) }

	send(30)
	if count() != 30 {
		t.Fatalf("%d files after 30 unknown images, want 30", count())
	}
	send(5) // full
	// The labelling step: 10 files moved out.
	moveOut(t, inbox, labelled, 10)
	send(15) // 10 fit again, without a restart or reload
	if count() != 30 {
		t.Errorf("%d files after moving 10 out and sending 15, want 30", count())
	}
	// Another process writes 3 files; the server counts them.
	moveOut(t, inbox, labelled, 5)
	for i, name := range []string{"a.png", "b.png", "c.png"} {
		must(os.WriteFile(filepath.Join(inbox, name), encodePNG(t, fashionImage(test, 1000+i)), 0o644))
	}
	send(5) // 2 fit
	if count() != 30 {
		t.Errorf("%d files with 3 written by another process, want the limit of 30", count())
	}
	// Room made, then a reload; the same image twice is one file.
	moveOut(t, inbox, labelled, 4)
	if code, body := servetest.PostReload(t, s.admin); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	send(3)
	next--
	send(1) // a repeat
	if count() != 29 {
		t.Errorf("%d files, want 29", count())
	}
	for result, want := range map[string]string{"saved": "45", "duplicate": "1", "full": "13"} {
		if got := collectedMetric(t, s.url, result); got != want {
			t.Errorf("collected{result=%q} = %s, want %s", result, got, want)
		}
	}
	if log := s.stderr.String(); strings.Count(log, "collection is full") < 1 || !strings.Contains(log, "resumes once files are moved out") {
		t.Errorf("the log does not say the collection is full:\n%s", log)
	}
}

// countEntries returns the number of entries of dir.
func countEntries(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// collectedMetric returns the server's bicyc_infer_unknown_collected_total
// for result, "0" if it has none.
func collectedMetric(t *testing.T, url, result string) string {
	_, m := servetest.GetAny(t, url+"/metrics")
	for _, line := range strings.Split(m, "\n") {
		if strings.HasPrefix(line, `bicyc_infer_unknown_collected_total{result="`+result+`"}`) {
			return strings.Fields(line)[1]
		}
	}
	return "0"
}

// moveOut moves the first n entries of inbox into labelled, as a person
// labelling the collection does.
func moveOut(t *testing.T, inbox, labelled string, n int) {
	t.Helper()
	entries, err := os.ReadDir(inbox)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[:n] {
		if err := os.Rename(filepath.Join(inbox, e.Name()), filepath.Join(labelled, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}
