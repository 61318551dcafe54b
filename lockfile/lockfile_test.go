package lockfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeLock writes a lock of o at path, last renewed at renewed.
func writeLock(t *testing.T, path string, o Owner, renewed time.Time) {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, renewed, renewed); err != nil {
		t.Fatal(err)
	}
}

// TestLockStaleness: a lock is taken over exactly when its holder is
// known to be gone or its lease expired.
func TestLockStaleness(t *testing.T) {
	me := self(time.Minute)
	// A process that has exited: its pid is free (until reused).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cases := []struct {
		owner   Owner
		renewed time.Time
		stale   string // part of the reason, "" for a live holder
	}{
		{me, now, ""},
		{Owner{Host: me.Host, BootID: me.BootID, PID: gone.Process.Pid, Token: "a"}, now, "is gone"},
		{Owner{Host: me.Host, BootID: me.BootID, PID: me.PID, Start: me.Start + 1, Token: "b"}, now, "another process"},
		{Owner{Host: me.Host, BootID: "another-boot", PID: me.PID, Token: "c"}, now, "rebooted"},
		{Owner{Host: "node7", BootID: "x", PID: 1, Token: "d", LeaseSeconds: 60}, now.Add(-30 * time.Second), ""},
		{Owner{Host: "node7", BootID: "x", PID: 1, Token: "e", LeaseSeconds: 60}, now.Add(-90 * time.Second), "lease of 1m0s expired"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		path := filepath.Join(dir, fmt.Sprintf("c%d.lock", i))
		writeLock(t, path, c.owner, c.renewed)
		l, _, reason, err := Acquire(context.Background(), path, Options{Lease: time.Minute})
		switch {
		case c.stale == "" && !errors.Is(err, ErrHeld):
			t.Errorf("case %d: a live holder's lock was taken (%q, %v)", i, reason, err)
		case c.stale != "" && (err != nil || !strings.Contains(reason, c.stale)):
			t.Errorf("case %d: reason %q, error %v; want a take-over because %s", i, reason, err, c.stale)
		}
		if l != nil {
			if held, ok := Holder(path); !ok || held.Token == c.owner.Token {
				t.Errorf("case %d: the lock does not name its new holder", i)
			}
			l.Release()
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("case %d: release left the lock (%v)", i, err)
			}
		}
	}
}

// TestLockLost: a holder whose lock was taken over (judged dead) is
// cancelled with ErrLost at its next renewal.
func TestLockLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.lock")
	l, ctx, _, err := Acquire(context.Background(), path, Options{Lease: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	writeLock(t, path, Owner{Host: "node7", Token: "thief", LeaseSeconds: 60}, time.Now())
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), ErrLost) {
			t.Errorf("cancelled with %v", context.Cause(ctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told that it lost its lock")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if o, _, err := readLock(path); err != nil || o.Token != "thief" {
		t.Errorf("release removed the new holder's lock: %+v %v", o, err)
	}
}

// TestMain lets the test binary play a second process: with
// LOCKFILE_HOLD=<path> it takes the lock, says "held" on stdout and keeps
// it until its stdin closes.
func TestMain(m *testing.M) {
	if path := os.Getenv("LOCKFILE_HOLD"); path != "" {
		l, _, _, err := Acquire(context.Background(), path, Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println("held")
		b := make([]byte, 1)
		os.Stdin.Read(b)
		l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder starts another process that holds the lock at path; closing the
// returned pipe makes it release the lock and exit.
func holder(t *testing.T, path string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKFILE_HOLD="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 5)
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "held\n" {
		t.Fatalf("the holder did not take the lock: %q %v", line, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, func() { stdin.Close() }
}

// TestAnotherProcess: a lock another live process holds is refused at
// once, naming its pid, host and start; with Wait the second process gets
// it once the first releases it; the lock of a killed holder is taken
// over.
func TestAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.lock")
	cmd, release := holder(t, path)
	host, _ := os.Hostname()
	_, _, _, err := Acquire(context.Background(), path, Options{})
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d on %s since ", cmd.Process.Pid, host)) {
		t.Fatalf("a held lock: %v", err)
	}
	var waited Owner
	go func() {
		time.Sleep(300 * time.Millisecond)
		release()
	}()
	start := time.Now()
	l, _, _, err := Acquire(context.Background(), path, Options{Wait: 20 * time.Second, Waiting: func(o Owner) { waited = o }})
	if err != nil {
		t.Fatalf("waited %s: %v", time.Since(start), err)
	}
	if waited.PID != cmd.Process.Pid {
		t.Errorf("waited for %+v, want pid %d", waited, cmd.Process.Pid)
	}
	if held, ok := Holder(path); !ok || held.PID != os.Getpid() || !strings.Contains(held.Command, os.Args[0]) {
		t.Errorf("the lock names %+v", held)
	}
	l.Release()

	cmd, _ = holder(t, path)
	cmd.Process.Kill()
	cmd.Wait()
	l, _, reason, err := Acquire(context.Background(), path, Options{})
	if err != nil || !strings.Contains(reason, "is gone") {
		t.Fatalf("the lock of a killed holder: %q %v", reason, err)
	}
	l.Release()
}
