package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses, as a process can set it (prctl PR_SET_NAME).
	got, err := ParseStat([]byte("4242 (a) b (c)) Z 17 4242 4240 34817 4242 4194564 191 0 0 0\n"))
	want := Stat{State: 'Z', PPID: 17, PGID: 4242, Session: 4240, TTY: 34817, Flags: 4194564}
	if err != nil || got != want {
		t.Fatalf("ParseStat = %+v, %v; want %+v", got, err, want)
	}
	if !got.Gone() {
		t.Error("a zombie is not Gone")
	}
	exiting, err := ParseStat([]byte("7 (x) S 1 7 7 0 -1 4194308 0"))
	if err != nil || !exiting.Gone() {
		t.Errorf("a process with PF_EXITING: %+v, %v; want Gone", exiting, err)
	}
	for state, stopped := range map[byte]bool{'T': true, 't': true, 'S': false, 'R': false, 'Z': false} {
		if got := (Stat{State: state}).Stopped(); got != stopped {
			t.Errorf("state %c: Stopped() = %v, want %v", state, got, stopped)
		}
	}
	for _, bad := range []string{
		"", "4242 no parenthesis S 1 1 1 0 -1 0",
		"1 (a) S 1 1 1 0 -1", // too few fields
		"1 (a) SS 1 1 1 0 -1 0", "1 (a) S x 1 1 0 -1 0", "1 (a) S 1 1 1 0 -1 -4", "1 (a) S 1 1 1 x -1 0",
	} {
		if s, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) = %+v, want an error", bad, s)
		}
	}
}

func TestParseStartTime(t *testing.T) {
	// A line of Linux 6.18 (cat's own), and a name holding ") S 1 2 3".
	for line, want := range map[string]uint64{
		"29178 (cat) R 29173 29173 12346 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 7743336 3133440 414 18446744073709551615 0\n": 7743336,
		"7 (x) S 1 2 3) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 18446744073709551615\n":                                        1<<64 - 1,
	} {
		if got, err := ParseStartTime([]byte(line)); err != nil || got != want {
			t.Errorf("ParseStartTime(%q) = %d, %v; want %d", line, got, err, want)
		}
	}
	for _, bad := range []string{
		"", "7 (x) S 1 7 7 0 -1 0",
		"7 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0\n",                      // cut before it
		"7 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5\n",                   // negative
		"7 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 18446744073709551616\n", // above 64 bits
	} {
		if got, err := ParseStartTime([]byte(bad)); err == nil {
			t.Errorf("ParseStartTime(%q) = %d, want an error", bad, got)
		}
	}
}

// FuzzParseStartTime: whatever a process names itself, the start time read is the one written
// after the name.
func FuzzParseStartTime(f *testing.F) {
	f.Add([]byte("cat"))
	f.Add([]byte("a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21"))
	f.Fuzz(func(t *testing.T, name []byte) {
		line := fmt.Sprintf("4321 (%s) S 17 4321 4321 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 1753766 3133440 414\n", name)
		if got, err := ParseStartTime([]byte(line)); err != nil || got != 1753766 {
			t.Fatalf("name %q: ParseStartTime = %d, %v; want 1753766", name, got, err)
		}
		_, _ = ParseStartTime(name) // any bytes: no panic
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (a) b (c)) Z 17 4242 4240 34817 4242 4194564 191 0 0 0\n"))
	f.Add([]byte("1 (x) S 0 1 1 0 -1 4194560"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// No panic; and what it parsed is in the line.
		s, err := ParseStat(b)
		if err == nil && (!bytes.Contains(b, []byte{s.State}) || !bytes.Contains(b, []byte(strconv.Itoa(s.PPID)))) {
			t.Fatalf("ParseStat(%q) = %+v: not what the line says", b, s)
		}
	})
}

// The test process itself, and a child it starts, as the kernel shows them.
func TestLiveProcess(t *testing.T) {
	self := os.Getpid()
	s, err := ReadStat("/proc", self)
	if err != nil {
		t.Fatal(err)
	}
	// /proc/PID/stat shows the main thread's state, which sleeps while this test runs on
	// another thread: the state is checked on this thread's own entry, under /proc/PID/task.
	if s.PPID != os.Getppid() || s.PGID != syscall.Getpgrp() || s.Gone() {
		t.Errorf("ReadStat(self) = %+v; want parent %d, group %d", s, os.Getppid(), syscall.Getpgrp())
	}
	runtime.LockOSThread()
	th, err := ReadStat(filepath.Join("/proc", strconv.Itoa(self), "task"), syscall.Gettid())
	runtime.UnlockOSThread()
	if err != nil || th.State != 'R' || th.PGID != syscall.Getpgrp() {
		t.Errorf("ReadStat of this thread = %+v, %v; want running, group %d", th, err, syscall.Getpgrp())
	}

	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := cmd.Process.Pid
	if !slices.Contains(Children("/proc", self), child) {
		t.Errorf("Children(self) = %v, without the child %d", Children("/proc", self), child)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed but not reaped: a zombie, still a child and still in the table.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s, err := ReadStat("/proc", child); err == nil && s.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed child %d never showed as a zombie", child)
		}
		time.Sleep(time.Millisecond)
	}
	if !slices.Contains(Children("/proc", self), child) {
		t.Errorf("a zombie child: Children %v; want it there", Children("/proc", self))
	}
	_ = cmd.Wait()
	if _, err := ReadStat("/proc", child); !os.IsNotExist(err) {
		t.Errorf("ReadStat of a reaped process: %v, want not-exist", err)
	}

	exe, err := Exe("/proc", self)
	if err != nil {
		t.Fatal(err)
	}
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || !os.SameFile(exe, st) {
		t.Errorf("Exe(self) is not %s (%v)", path, err)
	}
	if v, err := StatusField("/proc", self, "Pid"); err != nil || v != strconv.Itoa(self) {
		t.Errorf("StatusField(Pid) = %q, %v; want %d", v, err, self)
	}
	if _, err := StatusField("/proc", self, "NoSuchKey"); err == nil {
		t.Error("StatusField: no error for a missing key")
	}
}

// GroupOrphaned follows POSIX's definition on a made-up /proc: a group is held (not orphaned)
// by a member whose parent is in the same session and another group, a job-control shell's
// relation to its job, whichever member that is.
func TestGroupOrphaned(t *testing.T) {
	type p struct {
		ppid, pgid, sid int
		state           byte
	}
	for _, c := range []struct {
		name      string
		procs     map[int]p
		pgid, sid int
		orphaned  bool
		ok        bool
	}{
		{"a shell's job", map[int]p{1: {0, 1, 1, 'S'}, 10: {1, 10, 10, 'S'}, 20: {10, 20, 10, 'S'}}, 20, 10, false, true},
		{"a pipeline's second process holds it too", map[int]p{10: {1, 10, 10, 'S'}, 20: {10, 20, 10, 'S'}, 21: {10, 20, 10, 'S'}}, 20, 10, false, true},
		{"held by the member that is not the caller", map[int]p{10: {1, 10, 10, 'S'}, 20: {10, 20, 10, 'S'}, 21: {20, 20, 10, 'S'}}, 20, 10, false, true},
		{"a session of its own (setsid)", map[int]p{1: {0, 1, 1, 'S'}, 20: {1, 20, 20, 'S'}}, 20, 20, true, true},
		{"parent in another session", map[int]p{10: {1, 10, 10, 'S'}, 20: {10, 20, 30, 'S'}}, 20, 30, true, true},
		{"parent in the same group (a script without job control)", map[int]p{1: {0, 1, 1, 'S'}, 10: {1, 10, 10, 'S'}, 11: {10, 10, 10, 'S'}}, 10, 10, true, true},
		{"parent outside the namespace", map[int]p{1: {0, 1, 1, 'S'}}, 1, 1, true, true},
		{"the only member that held it is a zombie", map[int]p{10: {1, 10, 10, 'S'}, 20: {10, 20, 10, 'Z'}, 21: {1, 20, 10, 'S'}}, 20, 10, true, true},
		{"no member seen", map[int]p{10: {1, 10, 10, 'S'}}, 20, 10, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for pid, q := range c.procs {
				dir := filepath.Join(root, strconv.Itoa(pid))
				stat := fmt.Sprintf("%d (a b) %c %d %d %d 0 -1 4194304\n", pid, q.state, q.ppid, q.pgid, q.sid)
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			orphaned, ok := GroupOrphaned(root, c.pgid, c.sid)
			if orphaned != c.orphaned || ok != c.ok {
				t.Errorf("GroupOrphaned(pgid %d, session %d) = %t, %t; want %t, %t", c.pgid, c.sid, orphaned, ok, c.orphaned, c.ok)
			}
		})
	}
}

// Catches reads SigCgt's bit for the signal: bit N-1 for signal N.
func TestCatches(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	// gunicorn's master: HUP, INT, QUIT, USR1, USR2, TERM, CHLD, TTIN, TTOU, WINCH and more.
	status := "Name:\tgunicorn\nSigBlk:\t0000000000000000\nSigCgt:\t0000000008314a07\n"
	if err := os.WriteFile(filepath.Join(root, "7", "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	for sig, want := range map[int]bool{1: true, 2: true, 3: true, 9: false, 10: true, 15: true, 17: true, 28: true, 64: false, 0: false, 65: false} {
		if got := Catches(root, 7, sig); got != want {
			t.Errorf("Catches(signal %d) = %v, want %v", sig, got, want)
		}
	}
	if Catches(root, 8, 15) {
		t.Error("a process that is gone catches SIGTERM")
	}
}
