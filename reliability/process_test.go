package reliability

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/kernels"
)

// longTests reports whether BICYC_LONG_TESTS=1 asks for the long variants.
func longTests() bool { return os.Getenv("BICYC_LONG_TESTS") == "1" }

// root is the temporary directory shared by the tests of this binary: the
// bicyc binary and the reference run live there. TestMain removes it.
var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

func TestMain(m *testing.M) {
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	code := m.Run()
	if rootDir != "" {
		os.RemoveAll(rootDir)
	}
	os.Exit(code)
}

func sharedRoot(t *testing.T) string {
	t.Helper()
	rootOnce.Do(func() { rootDir, rootErr = os.MkdirTemp("", "bicyc-reliability-") })
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return rootDir
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// bicycBinary builds cmd/bicyc once per test binary with go build (the go
// command `go test` puts first on PATH) and returns its path.
func bicycBinary(t *testing.T) string {
	t.Helper()
	root := sharedRoot(t)
	buildOnce.Do(func() {
		binPath = filepath.Join(root, "bin", "bicyc")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/bicyc/bicyc/cmd/bicyc")
		cmd.Env = os.Environ()
		if !strings.Contains(os.Getenv("CGO_LDFLAGS"), "-lopenblas") {
			cmd.Env = append(cmd.Env, "CGO_LDFLAGS="+strings.TrimSpace(os.Getenv("CGO_LDFLAGS")+" -lopenblas"))
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build cmd/bicyc: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// childEnv is the test's environment without BICYC_* variables, so that
// only the command line configures the child.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BICYC_") {
			env = append(env, kv)
		}
	}
	return env
}

// trainArgs are the arguments of a new training run named name under
// runDir: the quick profile cut to 2 tasks of 5 classes, 100 training and
// 50 test images per class, 200 transport samples per old class, one
// thread (the test machine's two cores are shared). About 20 s per run.
func trainArgs(runDir, name string) []string {
	return []string{"train", "--quick",
		"--set", "stream.tasks=2",
		"--set", "quick_profile.train_per_class=100",
		"--set", "quick_profile.test_per_class=50",
		"--set", "quick_profile.transport_samples=200",
		"--set", "threads=1",
		"--run-dir", runDir, "--name", name}
}

// process is a running bicyc command whose combined output is read line by
// line as it comes.
type process struct {
	cmd    *exec.Cmd
	lines  chan string // every output line; closed at EOF
	mu     sync.Mutex
	output strings.Builder
	exited chan struct{} // closed once Wait has returned
	state  *os.ProcessState
}

// startBicyc starts the bicyc binary with args.
func startBicyc(t *testing.T, args ...string) *process {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: exec.Command(bicycBinary(t), args...), lines: make(chan string, 1<<14), exited: make(chan struct{})}
	p.cmd.Env = childEnv()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.output.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
		r.Close()
		close(p.lines)
		p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// Output returns everything the process has printed so far.
func (p *process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// waitFor reads output lines until one contains marker and reports true,
// or reports false once the process has closed its output (exited) or
// timeout has passed.
func (p *process) waitFor(marker string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return false
			}
			if strings.Contains(line, marker) {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// kill sends SIGKILL and waits for the process to end. It reports whether
// the signal killed it (false: it had already exited by itself).
func (p *process) kill() bool {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		panic(fmt.Sprintf("reliability: kill pid %d: %v", p.cmd.Process.Pid, err))
	}
	<-p.exited
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// finish waits up to timeout for the process to exit and fails the test
// unless it exited with status 0.
func (p *process) finish(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.kill()
		t.Fatalf("bicyc %s did not finish within %v:\n%s", strings.Join(p.cmd.Args[1:], " "), timeout, p.Output())
	}
	if !p.state.Success() {
		t.Fatalf("bicyc %s: %v:\n%s", strings.Join(p.cmd.Args[1:], " "), p.state, p.Output())
	}
}
