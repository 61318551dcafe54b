package train

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// logger writes timestamped lines to the run's log.txt and to another writer.
type logger struct {
	mu   sync.Mutex
	file *os.File
	out  io.Writer
}

// openLog opens the run's log.txt for appending, with out (nil: stderr)
// receiving the lines too.
func (r *Run) openLog(out io.Writer) error {
	f, err := os.OpenFile(filepath.Join(r.dir, "log.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	r.log = newLogger(f, out)
	return nil
}

// newLogger writes to file, when not nil, and to out (nil: stderr).
func newLogger(file *os.File, out io.Writer) *logger {
	if out == nil {
		out = os.Stderr
	}
	return &logger{file: file, out: out}
}

func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	if l.file != nil {
		fmt.Fprintf(l.file, "%s %s\n", time.Now().Format(time.RFC3339), line)
	}
	fmt.Fprintln(l.out, line)
}

func (l *logger) close() error {
	if l == nil || l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// newBar returns a progress bar of total steps on the run's progress
// writer, or a silent one when there is none.
func (r *Run) newBar(total int, desc string) *progressbar.ProgressBar {
	if r.progress == nil {
		return progressbar.DefaultSilent(int64(total), desc)
	}
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(r.progress),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(20),
	)
}
