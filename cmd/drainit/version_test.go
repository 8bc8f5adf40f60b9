package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
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
			if got := readVersion(tc.stampV, tc.stampC, tc.stamp, tc.bi).String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// The real binary, built both ways: the ldflags stamp is printed exactly; without it, a build in
// this checkout reports the checkout's commit and never the "dev" placeholder.
func TestVersionBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds drainit twice")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds the binary under test: %v", err)
	}
	dir := t.TempDir()
	build := func(name string, args ...string) string {
		t.Helper()
		bin := filepath.Join(dir, name)
		cmd := exec.Command(goTool, append(append([]string{"build", "-o", bin}, args...), ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
		for _, arg := range []string{"version", "--version"} {
			out, err := exec.Command(bin, arg).Output()
			if err != nil {
				t.Fatalf("%s %s: %v", name, arg, err)
			}
			if lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); len(lines) != 1 {
				t.Fatalf("%s %s prints %d lines, want one:\n%s", name, arg, len(lines), out)
			}
		}
		out, _ := exec.Command(bin, "version").Output()
		return strings.TrimSpace(string(out))
	}
	plat := runtime.GOOS + "/" + runtime.GOARCH

	got := build("stamped", "-ldflags", "-X main.version=v9.8.7 -X main.commit=abc1234 -X main.date=2026-11-23T10:00:00Z")
	if want := "drainit v9.8.7 (commit abc1234, committed 2026-11-23T10:00:00Z, " + runtime.Version() + ", " + plat + ")"; got != want {
		t.Errorf("stamped build prints\n%s\nwant\n%s", got, want)
	}

	// -buildvcs=true: the go command's default (auto) can be turned off in GOFLAGS, and a user's
	// build in a checkout has it on; outside a git checkout there is nothing to record.
	head, gitErr := exec.Command("git", "rev-parse", "HEAD").Output()
	var vcs []string
	if gitErr == nil {
		vcs = []string{"-buildvcs=true"}
	}
	got = build("plain", vcs...)
	v, rest, ok := strings.Cut(strings.TrimPrefix(got, "drainit "), " (")
	if !strings.HasPrefix(got, "drainit ") || !ok || !strings.HasSuffix(rest, runtime.Version()+", "+plat+")") {
		t.Fatalf("unstamped build prints %q: not drainit VERSION (…, GO, OS/ARCH)", got)
	}
	if v == "" || v == unstamped {
		t.Errorf("unstamped build reports version %q, not the module's", v)
	}
	if gitErr != nil {
		t.Logf("no git checkout to compare the commit with (%v): %s", gitErr, got)
		return
	}
	if want := "commit " + strings.TrimSpace(string(head)); !strings.Contains(rest, want) {
		t.Errorf("unstamped build in this checkout prints %q, without %q", got, want)
	}
	if !strings.Contains(rest, ", committed ") {
		t.Errorf("unstamped build in this checkout prints %q, without the commit's date", got)
	}
}
