// Package bounded reads input that comes from outside the program - files,
// standard input, request bodies - so that no input can make a reader use
// unbounded memory or hang.
//
// Two guards:
//
//   - Reader fails, instead of ending silently as io.LimitReader does, once
//     a stream goes past its byte limit: a caller can tell "too large" from
//     "complete" (ErrTooLarge).
//   - OpenRegular opens a path without blocking and refuses anything but a
//     regular file (ErrNotRegular): opening a named pipe that nobody writes
//     to blocks forever, and a device such as /dev/zero never ends. Kind
//     names what a path is instead, for messages.
//
// ReadFile combines the two for whole files read into memory.
//
// May import: nothing of bicyc (the ground floor).
package bounded
