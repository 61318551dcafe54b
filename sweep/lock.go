package sweep

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

// ErrCellHeld is wrapped when a cell is being run by another worker that
// is alive as far as this one can tell.
var ErrCellHeld = errors.New("cell held by another worker")

// ErrLockLost is the cause of a running cell's cancellation when another
// worker took its lock over (it judged this worker dead: its lease expired).
var ErrLockLost = errors.New("cell lock taken over by another worker")

// DefaultLease is how long a lock outlives its last renewal when nothing
// else tells that its worker is gone. Holders renew every quarter of it,
// so it also bounds how stale the clocks and attribute caches of a shared
// filesystem (NFS caches attributes up to 60 s) may be.
const DefaultLease = 10 * time.Minute

// Owner identifies a worker process: what a lock records so that other
// workers can tell whether it is still alive.
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
	// Token is unique to one acquisition of one lock.
	Token string `json:"token"`
	// Since is when the lock was taken; LeaseSeconds how long it lives
	// after its file's modification time, which the holder renews.
	Since        time.Time `json:"since"`
	LeaseSeconds float64   `json:"lease_seconds"`
}

func (o Owner) String() string {
	return fmt.Sprintf("pid %d on %s since %s", o.PID, o.Host, o.Since.UTC().Format(time.RFC3339))
}

// self returns this process as an Owner with a fresh token.
func self(lease time.Duration) Owner {
	host, _ := os.Hostname()
	o := Owner{Host: host, PID: os.Getpid(), BootID: bootID(), Since: time.Now(), LeaseSeconds: lease.Seconds()}
	o.Start, _ = processStart(o.PID)
	var b [12]byte
	_, _ = rand.Read(b[:])
	o.Token = hex.EncodeToString(b[:])
	return o
}

// bootID is this kernel's boot id, "" where there is none (not Linux).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// processStart reads the start time of process pid from /proc.
func processStart(pid int) (uint64, error) {
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
		err := syscall.Kill(o.PID, 0)
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Sprintf("process %d is gone", o.PID)
		}
		if start, err := processStart(o.PID); err == nil && o.Start != 0 && start != o.Start {
			return fmt.Sprintf("process %d is another process now", o.PID)
		}
		return ""
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

// Lock is a cell's lock held by this process: the file <cells>/<name>.lock
// holding its Owner. It is taken with link(2), which is atomic on local
// filesystems and NFS alike, and broken, when stale, by renaming it away
// and checking that the renamed file is the stale one.
type Lock struct {
	path   string
	owner  Owner
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// AcquireLock takes the lock at path for this process. A lock held by a
// live worker gives an error wrapping ErrCellHeld that names it; a stale
// one (see staleReason) is taken over, and reason says why ("" for a free
// lock). The returned context is ctx, cancelled with cause ErrLockLost if
// another worker takes the lock over; the lock renews its lease every
// lease/4 until Release.
func AcquireLock(ctx context.Context, path string, lease time.Duration) (l *Lock, lctx context.Context, reason string, err error) {
	me := self(lease)
	b, err := json.Marshal(me)
	if err != nil {
		return nil, nil, "", err
	}
	tmp := path + ".new-" + me.Token
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return nil, nil, "", err
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
			return nil, nil, "", fmt.Errorf("%s: %w: %s", path, ErrCellHeld, held)
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
		// unreadable one was not made by a worker; treat it as expired.
		return Owner{Host: "?", Token: "corrupt"}, time.Time{}, nil
	}
	return o, st.ModTime(), nil
}

// breakLock removes the stale lock of held at path. Two workers may judge
// the same lock stale at once; the one whose rename finds another owner in
// the file it moved (a lock the other worker just took) puts it back and
// reports the cell as held.
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
	return fmt.Errorf("%s: %w: %s", path, ErrCellHeld, moved)
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
				l.cancel(fmt.Errorf("%s: %w", l.path, ErrLockLost))
				return
			}
			now := time.Now()
			_ = os.Chtimes(l.path, now, now)
		}
	}
}

// Release removes the lock if this process still holds it. It is safe to
// call more than once.
func (l *Lock) Release() error {
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

// LockHolder returns the live holder of the lock at path, ok false when the
// lock is free or stale.
func LockHolder(path string) (o Owner, ok bool) {
	held, renewed, err := readLock(path)
	if err != nil {
		return Owner{}, false
	}
	return held, staleReason(held, self(0), renewed, time.Now()) == ""
}
