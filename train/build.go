package train

import (
	"runtime"
	"runtime/debug"
)

// trainingBuild names the build of this program for TaskReport.Build.
func trainingBuild() string {
	info, _ := debug.ReadBuildInfo()
	return describeBuild(runtime.Version(), info)
}

// describeBuild is "<go version> <revision>[-dirty]" from the VCS stamp
// that go build writes into a binary built in a git work tree, or the Go
// version alone when there is none (go test, go run, a build outside git).
// The revision is cut to 12 hex digits, as git abbreviates it.
func describeBuild(goVersion string, info *debug.BuildInfo) string {
	if info == nil {
		return goVersion
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return goVersion
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return goVersion + " " + rev
}
