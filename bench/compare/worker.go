package compare

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// PythonEnv names the environment variable that, when set, gives the
// interpreter the workers run instead of Debian's: that of another PyTorch
// installation, such as the virtual environment of a lent GPU machine
// (scripts/gpu/check-bench.sh), so that bicyc is compared with the PyTorch
// that machine has.
const PythonEnv = "BICYC_BENCH_PYTHON"

// Python returns the interpreter of the PyTorch side: $BICYC_BENCH_PYTHON
// if set, else Debian's /usr/bin/python3, the one that imports Debian's
// python3-torch (the python3 first on PATH may not).
func Python() string {
	if p := os.Getenv(PythonEnv); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// ErrWorker is wrapped by every error about a worker process: it failed to
// start, died, or sent a reply that is not the JSON asked for.
var ErrWorker = errors.New("python worker failed")

// Worker is a Python process that reads one JSON request per line on its
// standard input and writes one JSON reply per line on its standard output;
// its first line, before any request, is a greeting. Keeping the process
// alive between requests lets a benchmark interleave its own rounds with
// PyTorch's, so background load hits both sides alike, without paying
// PyTorch's import for every round.
//
// Create it with StartWorker and release it with Close. Not safe for
// concurrent use.
type Worker struct {
	name    string // for errors: the script's arguments
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	stderr  *bytes.Buffer // read only after the process has exited
	exited  bool
	exitErr error
}

// StartWorker starts Python with args (a script and its arguments), with
// this process's environment plus env ("NAME=value" entries), and decodes
// its greeting into greeting (a pointer, or nil to discard it).
// The caller owns the Worker and must Close it; on error the process is
// already stopped.
func StartWorker(greeting any, env []string, args ...string) (*Worker, error) {
	python := Python()
	w := &Worker{name: strings.Join(args, " "), cmd: exec.Command(python, args...), stderr: new(bytes.Buffer)}
	w.cmd.Env = append(os.Environ(), env...)
	w.cmd.Stderr = w.stderr
	var err error
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrWorker, w.name, err)
	}
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrWorker, w.name, err)
	}
	w.stdout = bufio.NewReaderSize(out, 1<<20)
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: starting %s %s: %w", ErrWorker, python, w.name, err)
	}
	if err := w.read(greeting); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Call sends req as one JSON line and decodes the reply line into reply (a
// pointer).
func (w *Worker) Call(req, reply any) error {
	line, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%w: encoding request for %s: %w", ErrWorker, w.name, err)
	}
	if _, err := w.stdin.Write(append(line, '\n')); err != nil {
		w.wait()
		return fmt.Errorf("%w: %s: writing request: %w; stderr: %s", ErrWorker, w.name, err, w.stderrTail())
	}
	return w.read(reply)
}

func (w *Worker) read(reply any) error {
	line, err := w.stdout.ReadBytes('\n')
	if err != nil {
		w.wait()
		return fmt.Errorf("%w: %s: no reply (%v); stderr: %s", ErrWorker, w.name, err, w.stderrTail())
	}
	if reply == nil {
		reply = new(map[string]any)
	}
	if err := json.Unmarshal(line, reply); err != nil {
		return fmt.Errorf("%w: %s: reply %.200q: %w", ErrWorker, w.name, line, err)
	}
	return nil
}

// stderrTail returns the end of what the worker wrote to its standard
// error, where Python prints its traceback. Call it only after wait.
func (w *Worker) stderrTail() string {
	s := strings.TrimSpace(w.stderr.String())
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

// wait closes the worker's input, which ends its request loop, and waits
// for it to exit, once.
func (w *Worker) wait() {
	if !w.exited {
		w.stdin.Close()
		w.exitErr = w.cmd.Wait()
		w.exited = true
	}
}

// Close ends the worker (see wait) and reports how it exited. It accepts a
// nil Worker and may be called again.
func (w *Worker) Close() error {
	if w == nil {
		return nil
	}
	w.wait()
	if w.exitErr != nil {
		return fmt.Errorf("%w: %s: %w; stderr: %s", ErrWorker, w.name, w.exitErr, w.stderrTail())
	}
	return nil
}
