//go:build !linux

package bundle

// exchange is unavailable here: Write falls back to two renames.
func exchange(a, b string) error { return errNoExchange }
