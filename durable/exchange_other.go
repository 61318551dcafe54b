//go:build !linux

package durable

// exchange is unavailable here: ReplaceDir falls back to two renames.
func exchange(a, b string) error { return errNoExchange }
