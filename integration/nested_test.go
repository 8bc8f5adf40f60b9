package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
)

// supervisorEnv is the variable a drainit sets for its app, naming itself (README, "drainit
// under drainit"), spelt as users see it.
const supervisorEnv = "DRAINIT_SUPERVISOR"

// nestedRefusal is how the line of a drainit that refuses to run under another begins.
func nestedRefusal(outer int) string {
	return "drainit: started under drainit PID " + strconv.Itoa(outer) + ", which already runs a stop sequence"
}

// TestNestedRefused: a drainit started in run mode under a drainit (directly, or from a shell
// script that does not exec it) exits 2 with one line naming the drainit above it, and does
// not start its app; the drainit above exits with that status, with its summary, as for any
// app that exits at once. With DRAINIT_HTTP_ADDR, which both read, the line is the same (it
// was "address already in use": the inner drainit tried the port the outer holds).
func TestNestedRefused(t *testing.T) {
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Fatalf("touch: %v", err)
	}
	cases := []struct {
		name string
		env  func(t *testing.T) []string
		// app runs the inner drainit (drainitBin) with the argv after it.
		app func(inner ...string) []string
	}{
		{"direct", nil, func(inner ...string) []string { return append([]string{drainitBin}, inner...) }},
		{"shell script without exec", nil, func(inner ...string) []string {
			return append([]string{"/bin/sh", "-c", `"$@"; status=$?; echo "inner drainit exited $status"; exit $status`, "sh", drainitBin}, inner...)
		}},
		{"control server", func(t *testing.T) []string { return []string{"DRAINIT_HTTP_ADDR=" + testenv.FreeLoopbackAddr(t)} },
			func(inner ...string) []string { return append([]string{drainitBin}, inner...) }},
	}
	eachMode(t, func(t *testing.T, m mode) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				if m == pid1 {
					requireRoot(t)
				}
				started := filepath.Join(t.TempDir(), "started")
				var env []string
				if c.env != nil {
					env = c.env(t)
				}
				d := start(t, spec{mode: m, env: env, args: []string{"--drain-delay", "2s"},
					app: c.app("--drain-delay", "2s", "--", touch, started)})
				if got := d.wait(waitTimeout); got != (exitStatus{code: 2}) {
					t.Errorf("drainit: %v, want exit 2, its app's\n%s", got, d.dump())
				}
				if _, err := os.Stat(started); err == nil {
					t.Error("the inner drainit started its app")
				}
				outer := 1
				if m == subreaper {
					outer = d.pid
				}
				var plain []string // what is not the outer drainit's JSON log
				for _, l := range nonEmpty(d.stderr.Texts()) {
					if !strings.HasPrefix(l, "{") {
						plain = append(plain, l)
					}
				}
				if len(plain) != 1 || !strings.HasPrefix(plain[0], nestedRefusal(outer)) {
					t.Errorf("want one line from the inner drainit starting %q, got %q\n%s", nestedRefusal(outer), plain, d.dump())
				}
				exiting := only(t, d, "drainit exiting")
				if st, _ := exiting.int("status"); st != 2 || !strings.Contains(exiting.str("summary"), "app exited 2") {
					t.Errorf("the outer drainit's last line %v: want status 2 and the app's exit in the summary\n%s", exiting, d.dump())
				}
			})
		}
	})
}

// TestNestedStaleMarker: the variable names a drainit only while that drainit is an ancestor in
// the same PID namespace, started when the variable says. Set by hand, copied from another
// namespace, naming a process that is not an ancestor or a pid since reused: it refuses
// nothing, and the app gets the variable naming its own drainit instead.
func TestNestedStaleMarker(t *testing.T) {
	self := marker(t, os.Getpid())
	sibling := exec.Command("sleep", "60")
	if err := sibling.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sibling.Process.Kill(); _ = sibling.Wait() })
	cases := []struct {
		name  string
		mode  mode
		value string
	}{
		// drainit's namespace is a new one: this process's pid means nothing there.
		{"another namespace", pid1, self.String()},
		{"pid 1, by hand", pid1, "pid=1 pidns=4026531836 start=1"},
		{"not an ancestor", subreaper, marker(t, sibling.Process.Pid).String()},
		// This process is drainit's ancestor, but its start time is not the variable's: a
		// process that got the pid of a drainit long gone.
		{"a reused pid", subreaper, markerOf{self.pid, self.pidns, self.start + 1}.String()},
		{"malformed", subreaper, "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := filepath.Join(t.TempDir(), "env")
			d := start(t, spec{mode: c.mode, env: []string{supervisorEnv + "=" + c.value},
				app: []string{"/bin/sh", "-c", `printf %s "$` + supervisorEnv + `" > "$0"`, got}})
			if st := d.wait(waitTimeout); st != (exitStatus{code: 0}) {
				t.Fatalf("drainit: %v, want exit 0: a stale %s refuses nothing\n%s", st, supervisorEnv, d.dump())
			}
			b, err := os.ReadFile(got)
			if err != nil {
				t.Fatalf("the app did not run: %v\n%s", err, d.dump())
			}
			want := "pid=1 "
			if c.mode == subreaper {
				want = "pid=" + strconv.Itoa(d.pid) + " "
			}
			if !strings.HasPrefix(string(b), want) || string(b) == c.value {
				t.Errorf("the app's %s is %q, want its own drainit's (%q…)", supervisorEnv, b, want)
			}
		})
	}
}

// TestSubcommandsUnderDrainit: what a drainit's app or hooks run of drainit that is not an app
// (version, sleep, check, --help) works under a drainit.
func TestSubcommandsUnderDrainit(t *testing.T) {
	requireRoot(t)
	script := `set -e; "$0" version; "$0" sleep 1ms; echo 'kind: ConfigMap' | "$0" check -; "$0" --help > /dev/null; echo all done`
	d := start(t, spec{mode: pid1, app: []string{"/bin/sh", "-c", script, drainitBin}})
	if st := d.wait(waitTimeout); st != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", st, d.dump())
	}
	if !strings.Contains(strings.Join(d.stdout.Texts(), "\n"), "all done") {
		t.Errorf("the script did not finish\n%s", d.dump())
	}
}

// markerOf is the variable's value naming a process, as drainit writes it (README, "drainit under
// drainit", docs/stop-sequence.md): its pid, the inode of its PID namespace and its start time
// in clock ticks.
type markerOf struct {
	pid          int
	pidns, start uint64
}

func (m markerOf) String() string {
	return fmt.Sprintf("pid=%d pidns=%d start=%d", m.pid, m.pidns, m.start)
}

// marker is the marker naming pid, read from /proc.
func marker(t *testing.T, pid int) markerOf {
	t.Helper()
	ns, err := proc.PIDNamespaceInode("/proc", pid)
	if err != nil {
		t.Fatal(err)
	}
	line, err := proc.StatLine("/proc", pid)
	if err != nil {
		t.Fatal(err)
	}
	start, err := proc.ParseStartTime(line)
	if err != nil {
		t.Fatal(err)
	}
	return markerOf{pid, ns, start}
}
