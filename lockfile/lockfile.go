package lockfile

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrHeld is wrapped when the lock is held by another process that is
// alive as far as this one can tell; the error names it.
var ErrHeld = errors.New("held by another writer")

// ErrLost is the cause of a holder's context cancellation when another
// process took its lock over (it judged the holder dead: its lease
// expired).
var ErrLost = errors.New("lock taken over by another writer")

// DefaultLease is how long a lock outlives its last renewal when nothing
// else tells that its holder is gone. Holders renew every quarter of it,
// so it also bounds how stale the clocks and attribute caches of a shared
// filesystem (NFS caches attributes up to 60 s) may be.
const DefaultLease = 10 * time.Minute

// maxCommand bounds the command line a lock records.
const maxCommand = 300

// Owner identifies a holder process: what a lock records so that other
// processes can tell whether it is still alive, and people who holds it.
type Owner struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// BootID is the kernel's boot id (/proc/sys/kernel/random/boot_id):
	// the same host name with another boot id was rebooted, so its
	// processes are gone.
	BootID string `json:"boot_id,omitempty"`
	// Start is the process's start time in clock ticks after boot (field
	// 22 of /proc/<pid>/stat): a new process that reuses the pid (a
	// restarted container) has another.
	Start uint64 `json:"start,omitempty"`
	// Command is the holder's command line (shortened), for people.
	Command string `json:"command,omitempty"`
	// Token is unique to one acquisition of one lock.
	Token string `json:"token"`
	// Since is when the lock was taken; LeaseSeconds how long it lives
	// after its file's modification time, which the holder renews.
	Since        time.Time `json:"since"`
	LeaseSeconds float64   `json:"lease_seconds"`
}

func (o Owner) String() string {
	s := fmt.Sprintf("pid %d on %s since %s", o.PID, o.Host, o.Since.UTC().Format(time.RFC3339))
	if o.Command != "" {
		s += fmt.Sprintf(" (%s)", o.Command)
	}
	return s
}

// ThisProcess reports whether o is this process (same host, boot, pid and
// start time).
func (o Owner) ThisProcess() bool {
	me := self(0)
	return o.Host == me.Host && o.BootID == me.BootID && o.PID == me.PID && o.Start == me.Start
}

// self returns this process as an Owner with a fresh token.
func self(lease time.Duration) Owner {
	host, _ := os.Hostname()
	o := Owner{Host: host, PID: os.Getpid(), BootID: BootID(), Since: time.Now(), LeaseSeconds: lease.Seconds()}
	o.Start, _ = ProcessStart(o.PID)
	if o.Command = strings.Join(os.Args, " "); len(o.Command) > maxCommand {
		o.Command = o.Command[:maxCommand] + "..."
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	o.Token = hex.EncodeToString(b[:])
	return o
}

// BootID is this kernel's boot id, "" where there is none (not Linux).
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ProcessStart reads the start time of process pid from /proc, in clock
// ticks after boot.
func ProcessStart(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name in parentheses may hold spaces: fields count from
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 overall
}

// staleReason tells why the lock of o, last renewed at renewed, is stale
// when judged by me at now, "" if its holder may be alive. A holder on
// this host and boot is alive exactly while its process is (same pid,
// same start time); any other holder until its lease expires.
func staleReason(o, me Owner, renewed, now time.Time) string {
	if o.Host == me.Host && o.BootID != "" && o.BootID == me.BootID {
		return localStale(o.PID, o.Start)
	}
	if o.Host == me.Host && o.BootID != "" && me.BootID != "" && o.BootID != me.BootID {
		return "its host was rebooted"
	}
	lease := time.Duration(o.LeaseSeconds * float64(time.Second))
	if lease <= 0 {
		lease = DefaultLease
	}
	if now.Sub(renewed) > lease {
		return fmt.Sprintf("its lease of %s expired at %s", lease, renewed.Add(lease).UTC().Format(time.RFC3339))
	}
	return ""
}

// localStale tells why process pid of this host and boot, started at
// start (0: unknown), is gone, "" while it runs.
func localStale(pid int, start uint64) string {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return fmt.Sprintf("process %d is gone", pid)
	}
	if now, err := ProcessStart(pid); err == nil && start != 0 && now != start {
		return fmt.Sprintf("process %d is another process now", pid)
	}
	return ""
}

// Running reports whether process pid of this host and boot, started at
// start (ProcessStart; 0: unknown), still runs.
func Running(pid int, start uint64) bool { return localStale(pid, start) == "" }

// Lock is a lock held by this process: a file holding its Owner. It is taken with link(2), which is atomic on local
// filesystems and NFS alike, and broken, when stale, by renaming it away
// and checking that the renamed file is the stale one.
type Lock struct {
	path   string
	owner  Owner
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// Options are how Acquire takes a lock.
type Options struct {
	// Lease is how long the lock outlives its last renewal for processes
	// that cannot see whether this one runs (other hosts); 0 means
	// DefaultLease.
	Lease time.Duration
	// Wait is how long to wait for a live holder to release the lock
	// before giving up with ErrHeld; 0 gives up at once.
	Wait time.Duration
	// Waiting, if set, is called once when Acquire starts waiting for
	// holder.
	Waiting func(holder Owner)
}

// Acquire takes the lock at path for this process. A lock held by a live
// process gives, after opts.Wait, an error wrapping ErrHeld that names
// it; a stale one (its holder is gone on this host, its host was
// rebooted, or its lease expired) is taken over, and reason says why (""
// for a free lock). The returned context is ctx, cancelled with cause
// ErrLost if another process takes the lock over; the lock renews its
// lease every lease/4 until Release.
func Acquire(ctx context.Context, path string, opts Options) (l *Lock, lctx context.Context, reason string, err error) {
	lease := opts.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	deadline := time.Now().Add(opts.Wait)
	pause := 50 * time.Millisecond
	for {
		l, lctx, reason, err = acquire(ctx, path, lease)
		if !errors.Is(err, ErrHeld) || !time.Now().Before(deadline) {
			return l, lctx, reason, err
		}
		if opts.Waiting != nil {
			if held, ok := Holder(path); ok {
				opts.Waiting(held)
			}
			opts.Waiting = nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, "", fmt.Errorf("%w (stopped waiting: %w)", err, ctx.Err())
		case <-time.After(min(pause, time.Until(deadline))):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

func acquire(ctx context.Context, path string, lease time.Duration) (l *Lock, lctx context.Context, reason string, err error) {
	me := self(lease)
	b, err := json.Marshal(me)
	if err != nil {
		return nil, nil, "", err
	}
	tmp := path + ".new-" + me.Token
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return nil, nil, "", fmt.Errorf("lock %s: %w", path, err)
	}
	defer os.Remove(tmp)
	for attempt := 0; ; attempt++ {
		err := os.Link(tmp, path)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 2 {
			return nil, nil, "", fmt.Errorf("lock %s: %w", path, err)
		}
		held, renewed, err := readLock(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, nil, "", err
		}
		reason = staleReason(held, me, renewed, time.Now())
		if reason == "" {
			return nil, nil, "", fmt.Errorf("%s: %w: %s", path, ErrHeld, held)
		}
		if err := breakLock(path, held); err != nil {
			return nil, nil, "", err
		}
		reason = fmt.Sprintf("took over the lock of %s: %s", held, reason)
	}
	lctx, cancel := context.WithCancelCause(ctx)
	l = &Lock{path: path, owner: me, cancel: cancel, done: make(chan struct{})}
	go l.renew(lease / 4)
	return l, lctx, reason, nil
}

// readLock reads the owner of the lock at path and when it was last renewed.
func readLock(path string) (Owner, time.Time, error) {
	var o Owner
	st, err := os.Stat(path)
	if err != nil {
		return o, time.Time{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return o, time.Time{}, err
	}
	if err := json.Unmarshal(b, &o); err != nil {
		// A lock is written whole before it is linked into place: an
		// unreadable one was not made by Acquire; treat it as expired.
		return Owner{Host: "?", Token: "corrupt"}, time.Time{}, nil
	}
	return o, st.ModTime(), nil
}

// breakLock removes the stale lock of held at path. Two processes may
// judge the same lock stale at once; the one whose rename finds another
// owner in the file it moved (a lock the other just took) puts it back
// and reports the lock as held.
func breakLock(path string, held Owner) error {
	aside := path + ".stale-" + self(0).Token
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	moved, _, err := readLock(aside)
	if err == nil && moved.Token == held.Token {
		return os.Remove(aside)
	}
	if err := os.Link(aside, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	os.Remove(aside)
	return fmt.Errorf("%s: %w: %s", path, ErrHeld, moved)
}

// renew touches the lock every period until Release, and cancels the
// lock's context when the file no longer holds this owner.
func (l *Lock) renew(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			if o, _, err := readLock(l.path); err != nil || o.Token != l.owner.Token {
				l.cancel(fmt.Errorf("%s: %w", l.path, ErrLost))
				return
			}
			now := time.Now()
			_ = os.Chtimes(l.path, now, now)
		}
	}
}

// Release removes the lock if this process still holds it. It is safe to
// call more than once, and on a nil Lock.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	select {
	case <-l.done:
		return nil
	default:
	}
	close(l.done)
	l.cancel(nil)
	o, _, err := readLock(l.path)
	if err != nil || o.Token != l.owner.Token {
		return nil
	}
	return os.Remove(l.path)
}

// Holder returns the live holder of the lock at path, ok false when the
// lock is free or stale.
func Holder(path string) (o Owner, ok bool) {
	held, renewed, err := readLock(path)
	if err != nil {
		return Owner{}, false
	}
	return held, staleReason(held, self(0), renewed, time.Now()) == ""
}
