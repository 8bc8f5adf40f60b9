//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/proc"
)

// A drainit under a drainit (docs/stop-sequence.md, "drainit under drainit"): the outer marks
// the environment the app and the exec hooks inherit with a marker that names it, its pid, PID
// namespace and start time. A pid alone means nothing in another PID namespace and can be given
// to another process once its own is gone, and the variable can be copied anywhere, so the inner
// takes the marker at its word only when it lives in the same PID namespace, the pid is one of
// its ancestors, and that ancestor started when the marker says. Anything else is a stale
// marker, and refuses nothing. The marker is read only when the variable is set; setting it costs
// a readlink and a read of one small file (bench/STARTUP.md, "the marker's cost").

// marker names the drainit that runs an app, in the variable it sets for the app (String's
// form).
type marker struct {
	PID   int    // as its own PID namespace numbers it
	PIDNS uint64 // the inode of its PID namespace (/proc/PID/ns/pid is "pid:[INODE]")
	Start uint64 // its start time, in clock ticks after boot (/proc/PID/stat's field 22)
}

// String is the variable's value: "pid=1 pidns=4026532871 start=1753715".
func (m marker) String() string {
	return fmt.Sprintf("pid=%d pidns=%d start=%d", m.PID, m.PIDNS, m.Start)
}

// parseMarker reads a marker written by String. Keys it does not know are skipped, so that a later
// drainit may add some; each of the three must be there once, as a number, and the pid above 0.
func parseMarker(s string) (marker, error) {
	vals := map[string]uint64{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return marker{}, fmt.Errorf("%q is not KEY=VALUE", clipMarker(f))
		}
		if k != "pid" && k != "pidns" && k != "start" {
			continue
		}
		if _, dup := vals[k]; dup {
			return marker{}, fmt.Errorf("%s given twice", k)
		}
		n, err := parseMarkerUint(v)
		if err != nil {
			return marker{}, fmt.Errorf("%s: %w", k, err)
		}
		// A pid fits in 22 bits (PID_MAX_LIMIT); 0 is no process's.
		if k == "pid" && (n == 0 || n > 1<<22) {
			return marker{}, fmt.Errorf("pid %d is no process's", n)
		}
		vals[k] = n
	}
	for _, k := range []string{"pid", "pidns", "start"} {
		if _, ok := vals[k]; !ok {
			return marker{}, fmt.Errorf("no %s", k)
		}
	}
	return marker{PID: int(vals["pid"]), PIDNS: vals["pidns"], Start: vals["start"]}, nil
}

// clipMarker shortens a piece of the variable for an error: the variable can be anything, of any
// length (a copy of something else), and the error goes to the log.
func clipMarker(s string) string {
	const most = 40
	if len(s) <= most {
		return s
	}
	return strings.ToValidUTF8(s[:most], "") + "…"
}

// parseMarkerUint reads a decimal number: digits only, no sign.
func parseMarkerUint(s string) (uint64, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number", clipMarker(s))
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", clipMarker(s)) // strconv's error would quote it whole
	}
	return n, nil
}

// markerOf is the marker of process pid, read from ROOT/PID (root is "/proc" but for tests): what a
// drainit sets for its app.
func markerOf(root string, pid int) (marker, error) {
	ns, err := proc.PIDNamespaceInode(root, pid)
	if err != nil {
		return marker{}, err
	}
	b, err := proc.StatLine(root, pid)
	if err != nil {
		return marker{}, err
	}
	start, err := proc.ParseStartTime(b)
	if err != nil {
		return marker{}, fmt.Errorf("%s: %w", filepath.Join(root, strconv.Itoa(pid), "stat"), err)
	}
	return marker{PID: pid, PIDNS: ns, Start: start}, nil
}

// maxNestingDepth bounds the walk up the process tree: a marker whose drainit is not among the
// first maxNestingDepth ancestors is stale. A container's tree is a few levels deep (drainit, a
// shell, the app); a host's, a dozen.
const maxNestingDepth = 64

// outerMarker returns the pid of the drainit that the marker value names when it is an ancestor of
// process self in self's PID namespace, as ROOT shows it. Otherwise it returns 0 and why the
// marker is stale, for a debug line: such a marker refuses nothing.
func outerMarker(root, value string, self int) (int, error) {
	m, err := parseMarker(value)
	if err != nil {
		return 0, fmt.Errorf("malformed: %w", err)
	}
	ns, err := proc.PIDNamespaceInode(root, self)
	if err != nil {
		return 0, err
	}
	if ns != m.PIDNS {
		return 0, fmt.Errorf("pid %d of another PID namespace (pid:[%d]; this one is pid:[%d])", m.PID, m.PIDNS, ns)
	}
	pid := self
	for range maxNestingDepth {
		b, err := proc.StatLine(root, pid)
		if err != nil {
			return 0, fmt.Errorf("walking up from pid %d: %w", self, err)
		}
		if pid != self && pid == m.PID {
			start, err := proc.ParseStartTime(b)
			if err != nil {
				return 0, fmt.Errorf("ancestor %d: %w", pid, err)
			}
			if start != m.Start {
				return 0, fmt.Errorf("ancestor %d started at tick %d, not %d: a later process with the same pid", pid, start, m.Start)
			}
			return pid, nil
		}
		st, err := proc.ParseStat(b)
		if err != nil {
			return 0, fmt.Errorf("ancestor %d: %w", pid, err)
		}
		// 0: pid was the namespace's first process, or its parent is outside the namespace.
		if st.PPID == 0 {
			return 0, fmt.Errorf("pid %d is not an ancestor", m.PID)
		}
		pid = st.PPID
	}
	return 0, fmt.Errorf("pid %d is not among the first %d ancestors", m.PID, maxNestingDepth)
}

// outerDrainit is the pid of a drainit in run mode above this one, found from the marker it
// set (above), or 0 and why the marker names none (nil when there is no marker). A
// drainit that is not nested reads nothing for it: the variable is absent.
func outerDrainit(env map[string]string) (int, error) {
	v, ok := env[config.SupervisorEnv]
	if !ok {
		return 0, nil
	}
	return outerMarker("/proc", v, os.Getpid())
}

// markEnvironment sets the marker naming this drainit (above) in its environment,
// which the app and the exec hooks inherit (both are started with os.Environ()), and returns
// what puts the environment back, for a caller that outlives the run (the tests that run
// runCmd in their own process). A marker inherited from above, stale since this drainit runs,
// is replaced; when this drainit's own cannot be read (no /proc), it is removed, so that the
// variable names the nearest drainit or none.
func markEnvironment(log zerolog.Logger) (restore func()) {
	prev, had := os.LookupEnv(config.SupervisorEnv)
	restore = func() {
		if had {
			_ = os.Setenv(config.SupervisorEnv, prev)
		} else {
			_ = os.Unsetenv(config.SupervisorEnv)
		}
	}
	m, err := markerOf("/proc", os.Getpid())
	if err != nil {
		log.Debug().Err(err).Msg("cannot name this drainit in the app's environment: a drainit started below it will not know it is nested")
		_ = os.Unsetenv(config.SupervisorEnv)
		return restore
	}
	_ = os.Setenv(config.SupervisorEnv, m.String())
	return restore
}
