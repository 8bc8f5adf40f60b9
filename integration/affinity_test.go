package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testenv"
)

// drainit holds its own start on one CPU (internal/startsig), and the app, and drainit's own
// threads by the time the app runs, have the CPU affinity drainit was started with: all the
// CPUs, or the one a launcher chose (`taskset -c 1 drainit …`).
func TestAppGetsDrainitsAffinity(t *testing.T) {
	taskset, err := testenv.LookPath("taskset")
	if err != nil {
		testenv.SkipUnlessCI(t, "no taskset (util-linux) to start drainit on chosen CPUs: "+err.Error())
	}
	out, err := exec.Command("sh", "-c", `grep Cpus_allowed_list /proc/self/status`).Output()
	if err != nil {
		t.Fatalf("reading a child's affinity: %v", err)
	}
	_, all, _ := strings.Cut(strings.TrimSpace(string(out)), ":")
	all = strings.TrimSpace(all)
	one := all[strings.LastIndexAny(all, ",-")+1:] // the last CPU
	eachMode(t, func(t *testing.T, m mode) {
		for _, set := range []string{all, one} {
			d := start(t, spec{mode: m, launcher: []string{taskset, "-c", set}, app: app("affinity")})
			line := d.stdout.AwaitLine(t, waitTimeout, "the app's report", lines.Containing("affinity app=")).Text
			if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
				t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
			}
			// The app's parent is drainit, as PID 1 and as subreaper.
			if want := "affinity app=" + set + " parent=" + set; strings.TrimSpace(line) != want {
				t.Errorf("drainit started on CPUs %s: %q, want %q\n%s", set, line, want, d.dump())
			}
		}
	})
}

// drainit's Go code runs on one P: the runtime starts it so from the one-CPU start (testbin
// builds drainit with its entry point, as it ships), and drainit lowers it when a GOMAXPROCS in
// the environment (set for a Go app) gave it more; the app keeps that GOMAXPROCS.
func TestDrainitRunsOnOneP(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		for _, env := range []string{"", "8"} {
			s := spec{mode: m, args: []string{"--log-level", "debug"}, app: []string{"sh", "-c", `echo "app GOMAXPROCS=[$GOMAXPROCS]"`}}
			wantStart := 1
			if env != "" {
				s.env = []string{"GOMAXPROCS=" + env}
				wantStart = 8
			}
			d := start(t, s)
			d.stdout.AwaitLine(t, waitTimeout, "the app's line", lines.Containing("app GOMAXPROCS=["+env+"]"))
			if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
				t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
			}
			var found bool
			for _, e := range d.logs() {
				if e.msg() != "drainit's Go code runs on one P" {
					continue
				}
				found = true
				procs, _ := e.int("gomaxprocs")
				atStart, _ := e.int("gomaxprocs_at_start")
				if procs != 1 || atStart != wantStart {
					t.Errorf("GOMAXPROCS=%q in the environment: drainit logged gomaxprocs %d (at its start %d), want 1 (%d)",
						env, procs, atStart, wantStart)
				}
			}
			if !found {
				t.Errorf("no debug line on GOMAXPROCS\n%s", d.dump())
			}
		}
	})
}
