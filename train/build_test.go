package train

import (
	"runtime/debug"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	rev := "5ca2492e1f3b9a0c7d6e5f4a3b2c1d0e9f8a7b6c"
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "go1.26.8"},
		{"no VCS stamp", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}}}, "go1.26.8"},
		{"clean tree", &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}}, "go1.26.8 5ca2492e1f3b"},
		{"uncommitted changes", &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: rev}}}, "go1.26.8 5ca2492e1f3b-dirty"},
	} {
		if got := describeBuild("go1.26.8", c.info); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
