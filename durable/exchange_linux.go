package durable

import "golang.org/x/sys/unix"

// exchange atomically swaps the directories a and b.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if err == unix.ENOSYS || err == unix.EINVAL {
		return errNoExchange // an old kernel or a file system without it
	}
	return err
}

// renameNoReplace renames a to b, failing with EEXIST if b exists.
func renameNoReplace(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
	if err == unix.ENOSYS || err == unix.EINVAL {
		return errNoNoReplace
	}
	return err
}
