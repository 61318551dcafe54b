package reliability

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/kernels"
)

// TestBicycStartsOnBestKernels runs real bicyc processes through their start-up (kernels.Ensure in main) and
// reads what `bicyc doctor --json` says runs: with no OPENBLAS_CORETYPE in the environment, the widest kernel
// set the processor allows (OpenBLAS's own choice when it already is, else bicyc's after one restart); with
// the user's OPENBLAS_CORETYPE, that one.
func TestBicycStartsOnBestKernels(t *testing.T) {
	bin := bicycBinary(t)
	features := kernels.Detect()
	best, _ := kernels.Best(features)
	for i, c := range []struct {
		name     string
		coreType string // the user's OPENBLAS_CORETYPE; "" unset
		wantBy   kernels.Source
	}{
		{"automatic", "", ""},
		{"user's Prescott", "Prescott", kernels.SourceUser},
		{"user's Sandybridge", "Sandybridge", kernels.SourceUser},
	} {
		env := []string{}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") && !strings.HasPrefix(kv, "BICYC_") {
				env = append(env, kv)
			}
		}
		if c.coreType != "" {
			env = append(env, "OPENBLAS_CORETYPE="+c.coreType)
		}
		cmd := exec.Command(bin, "doctor", "--json")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%d %s: bicyc doctor: %v\n%s", i, c.name, err, out)
		}
		var r struct {
			BLAS kernels.Status `json:"blas"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%d %s: %v\n%s", i, c.name, err, out)
		}
		s := r.BLAS
		t.Logf("%d %s: %s", i, c.name, s)
		if s.Best != best {
			t.Errorf("%d %s: best kernels %q, this process finds %q", i, c.name, s.Best, best)
		}
		switch {
		case c.coreType != "":
			if s.Source != c.wantBy || !strings.EqualFold(s.Kernels, c.coreType) {
				t.Errorf("%d %s: kernels %s chosen by %s, want %s chosen by %s", i, c.name, s.Kernels, s.Source, c.coreType, c.wantBy)
			}
		case s.Source == kernels.SourceBicyc:
			if !strings.EqualFold(s.Kernels, best) || s.Picked == "" {
				t.Errorf("%d %s: bicyc restarted, but runs %s (OpenBLAS picked %q), want %s", i, c.name, s.Kernels, s.Picked, best)
			}
			if ch := kernels.Choose(features, s.Picked); !strings.EqualFold(ch.CoreType, best) {
				t.Errorf("%d %s: OpenBLAS picked %s, for which Choose asks %q, yet bicyc restarted", i, c.name, s.Picked, ch.CoreType)
			}
		case s.Source == kernels.SourceOpenBLAS:
			if ch := kernels.Choose(features, s.Kernels); ch.CoreType != "" {
				t.Errorf("%d %s: runs OpenBLAS's %s, narrower than %s: no restart", i, c.name, s.Kernels, ch.CoreType)
			}
		default:
			t.Errorf("%d %s: chosen by %q with no OPENBLAS_CORETYPE set", i, c.name, s.Source)
		}
	}
}
