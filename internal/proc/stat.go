package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Stat is what ROOT/PID/stat says about a process: the fields up to the kernel's flags.
type Stat struct {
	State   byte // R, S, D, T, t, Z, X, …
	PPID    int  // the parent, as the reader's PID namespace numbers it
	PGID    int  // the process group
	Session int
	TTY     int    // the controlling terminal's device number (tty_nr), 0 for none
	Flags   uint64 // the kernel's PF_* flags
}

// PFExiting is the kernel's PF_EXITING flag: the process is in exit. It has released its files
// and can never run its own code again, but is not a zombie yet.
const PFExiting = 0x4

// Gone reports whether the process can no longer run its own code: a zombie, dead, or in exit.
func (s Stat) Gone() bool {
	return s.State == 'Z' || s.State == 'X' || s.Flags&PFExiting != 0
}

// Stopped reports whether the process is stopped: by job control (SIGSTOP, SIGTSTP), state T,
// or by a tracer, state t. A signal it catches then waits until it is continued.
func (s Stat) Stopped() bool { return s.State == 'T' || s.State == 't' }

// ReadStat reads ROOT/PID/stat (root is "/proc" but for tests). The error wraps os.ErrNotExist
// once the process is gone (reaped).
func ReadStat(root string, pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// ParseStat parses the content of a /proc/PID/stat file. The command name (field 2) may hold
// spaces and parentheses (a process can name itself anything, up to 15 bytes), so fields are
// counted from the last ')'. A line of another shape (a truncated read, a pid that is no number)
// is an error.
func ParseStat(b []byte) (Stat, error) {
	// state ppid pgrp session tty_nr tpgid flags …
	f, err := statFields(b, 7)
	if err != nil {
		return Stat{}, err
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("stat: state %q is not one letter", f[0])
	}
	s := Stat{State: f[0][0]}
	for _, n := range []struct {
		name string
		text []byte
		to   *int
	}{{"ppid", f[1], &s.PPID}, {"pgrp", f[2], &s.PGID}, {"session", f[3], &s.Session}} {
		// Pids, groups and sessions are unsigned and fit in 31 bits; 0 is the kernel's (or none).
		if !digits(n.text) {
			return Stat{}, fmt.Errorf("stat: %s %q is not a number", n.name, n.text)
		}
		v, err := strconv.ParseInt(string(n.text), 10, 32)
		if err != nil {
			return Stat{}, fmt.Errorf("stat: %s: %w", n.name, err)
		}
		*n.to = int(v)
	}
	tty, err := strconv.ParseInt(string(f[4]), 10, 32)
	if err != nil {
		return Stat{}, fmt.Errorf("stat: tty_nr: %w", err)
	}
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("stat: flags: %w", err)
	}
	s.TTY, s.Flags = int(tty), flags
	return s, nil
}

// statFields splits a /proc/PID/stat line into the fields after the command name (field 3, the
// state, is the first), of which it wants at least want. The name may hold spaces and
// parentheses, so the fields start after the last ')'.
func statFields(b []byte, want int) ([][]byte, error) {
	open, i := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 2 || i < open || b[open-1] != ' ' || !digits(b[:open-1]) {
		return nil, errors.New("stat: not \"PID (command) …\"")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < want {
		return nil, fmt.Errorf("stat: %d fields after the command name, want at least %d", len(f), want)
	}
	return f, nil
}

// ParseStartTime reads the start time from a /proc/PID/stat line: field 22, in clock ticks
// after the system booted (as the reader's time namespace counts them). With the pid it tells a
// process from a later one the kernel gave the same pid, unless the namespace's pids wrapped
// around within one tick (10 ms at the usual USER_HZ of 100).
func ParseStartTime(b []byte) (uint64, error) {
	f, err := statFields(b, 20)
	if err != nil {
		return 0, err
	}
	if !digits(f[19]) {
		return 0, fmt.Errorf("stat: start time %q is not a number", f[19])
	}
	t, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat: start time: %w", err)
	}
	return t, nil
}

// GroupOrphaned reports whether process group pgid, of session sid, is orphaned as POSIX and the
// kernel define it: no member has a parent in the same session but in another group, which is
// how a job-control shell is related to its jobs. Nothing would continue such a group once it
// stopped, and the kernel discards SIGTSTP, SIGTTIN and SIGTTOU sent to it for that reason. A
// parent outside root's PID namespace (PPID 0) cannot be seen and does not count. ok is false
// when root shows no member of the group (no /proc, or another namespace's).
func GroupOrphaned(root string, pgid, sid int) (orphaned, ok bool) {
	for _, pid := range Pids(root) {
		st, err := ReadStat(root, pid)
		if err != nil || st.PGID != pgid || st.Gone() {
			continue
		}
		ok = true
		if st.PPID == 0 {
			continue
		}
		if parent, err := ReadStat(root, st.PPID); err == nil && parent.PGID != pgid && parent.Session == sid {
			return false, true
		}
	}
	return ok, ok
}
