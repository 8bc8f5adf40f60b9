package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

const testRev = "0123456789abcdef0123456789abcdef01234567"

func vcsSettings(rev, when, modified string) []debug.BuildSetting {
	return []debug.BuildSetting{
		{Key: "-compiler", Value: "gc"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: rev},
		{Key: "vcs.time", Value: when},
		{Key: "vcs.modified", Value: modified},
	}
}

// The fallback: what each way of building leaves in the binary, and what drainit then says.
func TestReadVersion(t *testing.T) {
	plat := runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name                  string
		stampV, stampC, stamp string
		bi                    *debug.BuildInfo
		want                  string
	}{{
		// go install github.com/drainit/drainit/cmd/drainit@v0.1.0: the proxy's zip has no VCS data.
		name: "go install of a tag",
		bi:   &debug.BuildInfo{Main: debug.Module{Path: "github.com/drainit/drainit", Version: "v0.1.0"}},
		want: "drainit v0.1.0 (" + plat + ")",
	}, {
		name:   "go install of a tag, main.version at its default",
		stampV: "dev",
		bi:     &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}},
		want:   "drainit v0.1.0 (" + plat + ")",
	}, {
		name:   "go build in a clean checkout",
		stampV: "dev",
		bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261123100000-0123456789ab"},
			Settings: vcsSettings(testRev, "2026-11-23T10:00:00Z", "false")},
		want: "drainit v0.1.1-0.20261123100000-0123456789ab (commit " + testRev + ", committed 2026-11-23T10:00:00Z, " + plat + ")",
	}, {
		name:   "go build in a checkout with changes",
		stampV: "dev",
		bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcsSettings(testRev, "2026-11-23T10:00:00Z", "true")},
		want: "drainit (devel) (commit " + testRev + "-dirty, committed 2026-11-23T10:00:00Z, " + plat + ")",
	}, {
		name:   "make build: the stamp wins, git's zone becomes UTC",
		stampV: "v0.1.0", stampC: testRev, stamp: "2026-11-23T11:00:00+01:00",
		bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcsSettings(testRev, "2026-11-23T10:00:00Z", "false")},
		want: "drainit v0.1.0 (commit " + testRev + ", committed 2026-11-23T10:00:00Z, " + plat + ")",
	}, {
		// A stamp from elsewhere (a release tool's own checkout): the local VCS data is not about it.
		name:   "a stamped commit other than the recorded one",
		stampV: "v0.1.0", stampC: "fedcba",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcsSettings(testRev, "2026-11-23T10:00:00Z", "true")},
		want: "drainit v0.1.0 (commit fedcba, " + plat + ")",
	}, {
		name:   "no build info at all",
		stampV: "dev",
		want:   "drainit dev (" + plat + ")",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := read(tc.stampV, tc.stampC, tc.stamp, tc.bi).String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
