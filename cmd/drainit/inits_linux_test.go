package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// maxOwnInitBytes is what a package of this module other than signals/early may allocate while
// it is initialised. Go initialises every linked package before main, so whatever a subcommand
// prepares at package level is paid on every container start, before drainit starts the app:
// tables and maps are built on first use. Measured: internal/config 88 bytes (its
// sync.OnceValue); internal/check, before it moved to drainit-check (TestStartPathLinksNoCheck),
// 328 bytes, and with six regexp.MustCompile and a map of stop signals at package level 50 KB
// and ~0.15 ms.
const maxOwnInitBytes = 1024

// The real binary, as it ships (with its entry point), run as `drainit -- /bin/true` with the
// Go runtime's init trace: no package of this module but signals/early, whose initialisation
// registers the signals on purpose, allocates more than maxOwnInitBytes.
func TestStartPathInitsAreSmall(t *testing.T) {
	testenv.SkipShort(t, "builds drainit")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds the binary under test: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "drainit")
	build := exec.Command(goTool, "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--log-format", "json", "--", "/bin/true")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("drainit -- /bin/true: %v\n%s", err, out)
	}
	const module = "github.com/drainit/drainit/"
	type pkgInit struct {
		pkg   string
		bytes int
	}
	var own, others []pkgInit
	for l := range strings.SplitSeq(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(l)
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("init trace line %q: %v", l, err)
		}
		if strings.HasPrefix(f[1], module) {
			own = append(own, pkgInit{f[1], n})
		} else {
			others = append(others, pkgInit{f[1], n})
		}
	}
	if len(own) == 0 {
		t.Fatalf("no package of this module in the init trace:\n%s", out)
	}
	for _, p := range own {
		if p.pkg != module+"signals/early" && p.bytes > maxOwnInitBytes {
			t.Errorf("%s allocates %d bytes while drainit initialises, before it starts the app (at most %d): build it on first use",
				p.pkg, p.bytes, maxOwnInitBytes)
		}
	}
	// What the dependencies cost, for whoever reads the test's log: not this module's to change.
	sort.Slice(others, func(i, j int) bool { return others[i].bytes > others[j].bytes })
	var top []string
	for _, p := range others[:min(len(others), 5)] {
		top = append(top, p.pkg+" "+strconv.Itoa(p.bytes))
	}
	t.Logf("largest initialisations outside this module (bytes): %s", strings.Join(top, ", "))
}
