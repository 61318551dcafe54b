//go:build !linux

package durable

// exchange is unavailable here: ReplaceDir falls back to two renames.
func exchange(a, b string) error { return errNoExchange }

// renameNoReplace is unavailable here: CreateDir falls back to rename(2).
func renameNoReplace(a, b string) error { return errNoNoReplace }
