// Package lockfile keeps one writer at a time on a thing saved on disk: a
// sweep cell, a run directory, a model repository's model. A lock is a
// small file that records its holder (host, boot, pid, command, since
// when); it is taken with link(2), atomic on local file systems and NFS
// alike, and taken over only when its holder is known to be gone: a
// process on this host and boot that has exited (or whose pid now names
// another process), a holder on a host that was rebooted, or one anywhere
// whose lease expired (holders renew it every quarter of the lease).
//
//	l, ctx, tookOver, err := lockfile.Acquire(ctx, path, lockfile.Options{Wait: time.Minute})
//	if err != nil { ... } // errors.Is(err, lockfile.ErrHeld): names the holder
//	defer l.Release()
//
// Running(pid, start) tells whether a process of this host is alive, for
// other litter that records its maker (package durable's temporary
// directories).
//
// May import: nothing of bicyc (the ground floor).
package lockfile
