package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testbin"
	"github.com/drainit/drainit/internal/proc"
)

// The binaries TestMain has built for the whole package, and the unshare found in PATH ("" when
// there is none).
var (
	drainitBin string
	testappBin string
	unshareBin string
)

// Deadlines. They bound waits for things that take milliseconds when all is well; they are long
// only so that a loaded CI machine does not fail a correct drainit.
const (
	waitTimeout = 15 * time.Second
	// drainTimeout bounds how long drainit's stdout and stderr may stay open after it exited: only
	// a process that outlived drainit can hold them.
	drainTimeout = 5 * time.Second
	pollEvery    = 2 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// Static builds (CGO_ENABLED=0) as they ship, made the same way for every integration package.
	bins, err := testbin.Build()
	defer testbin.Cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	drainitBin, testappBin = bins.Drainit, bins.TestApp
	unshareBin, _ = exec.LookPath("unshare")
	// `testapp die QUIT` and `die ABRT` would otherwise leave core files wherever the kernel's
	// core_pattern puts them; children inherit the limit.
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CORE, &lim) == nil {
		lim.Cur = 0
		_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &lim)
	}
	return m.Run()
}

// skipOrFail skips the test with reason, or fails it under CI=true, where a skip would hide a
// test that never ran.
func skipOrFail(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: not skipping)", reason)
	}
	t.Skip(reason)
}

var (
	pidnsOnce  sync.Once
	pidnsError string
)

// requireRoot skips (or, under CI=true, fails) a test that needs to create a PID namespace: root,
// unshare, and a kernel and sandbox that allow it.
func requireRoot(t *testing.T) {
	t.Helper()
	switch {
	case os.Geteuid() != 0:
		skipOrFail(t, "needs root to create a PID namespace (unshare --pid)")
	case unshareBin == "":
		skipOrFail(t, "needs unshare (util-linux) to create a PID namespace")
	}
	pidnsOnce.Do(func() {
		out, err := exec.Command(unshareBin, "--pid", "--fork", "--mount-proc", "--kill-child", "true").CombinedOutput()
		if err != nil {
			pidnsError = fmt.Sprintf("cannot create a PID namespace here: unshare: %v: %s", err, bytes.TrimSpace(out))
		}
	})
	if pidnsError != "" {
		skipOrFail(t, pidnsError)
	}
}

// mode is how drainit runs: as PID 1 of its own PID namespace, as in a container, or as an
// ordinary process that makes itself a child subreaper.
type mode int

const (
	pid1 mode = iota
	subreaper
)

func (m mode) String() string {
	if m == pid1 {
		return "pid1"
	}
	return "subreaper"
}

// eachMode runs f as one subtest per mode.
func eachMode(t *testing.T, f func(t *testing.T, m mode)) {
	for _, m := range []mode{pid1, subreaper} {
		t.Run(m.String(), func(t *testing.T) { f(t, m) })
	}
}

// app is the argv of a testapp run.
func app(args ...string) []string {
	return append([]string{testappBin}, args...)
}

// spec is one run of drainit.
type spec struct {
	mode mode
	args []string // drainit's options, before "--"
	app  []string // the app's argv
	env  []string // KEY=VALUE added to the environment drainit (and so the app) gets
	// launcher is an argv prefix that execs the rest of the command line (unshare or drainit)
	// in its own process, e.g. testapp's _blocked mode.
	launcher []string
}

// drainitRun is a running (or finished) drainit.
type drainitRun struct {
	t    *testing.T
	mode mode
	cmd  *exec.Cmd
	// pid is drainit's pid as this process sees it: unshare's child in pid1 mode. Zero when
	// drainit exited before it could be found.
	pid    int
	stdout *lineLog
	stderr *lineLog
	exited chan struct{} // closed when cmd.Wait has returned
	state  *os.ProcessState
}

// startPID1 starts drainit with drainitArgs as PID 1 of a new PID namespace, running app.
func startPID1(t *testing.T, drainitArgs []string, app ...string) *drainitRun {
	t.Helper()
	return start(t, spec{mode: pid1, args: drainitArgs, app: app})
}

// startIn starts drainit in mode m.
func startIn(t *testing.T, m mode, drainitArgs []string, app ...string) *drainitRun {
	t.Helper()
	return start(t, spec{mode: m, args: drainitArgs, app: app})
}

// start starts drainit as s describes, in a fresh working directory, with stdin on /dev/null and
// stdout and stderr on pipes read line by line. It returns once drainit's pid is known (or
// drainit has already exited). Whatever is still running when the test ends is killed.
func start(t *testing.T, s spec) *drainitRun {
	t.Helper()
	argv := append([]string{}, s.launcher...)
	if s.mode == pid1 {
		requireRoot(t)
		argv = append(argv, unshareBin, "--pid", "--fork", "--mount-proc", "--kill-child")
	}
	argv = append(argv, drainitBin)
	argv = append(argv, s.args...)
	argv = append(argv, "--")
	argv = append(argv, s.app...)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), s.env...)
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	// Only the child keeps the write ends, so EOF means every process that inherited them is gone.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		t.Fatalf("starting %q: %v", argv, err)
	}
	d := watch(t, s.mode, cmd, newLineLog("stdout", outR), newLineLog("stderr", errR))
	if s.mode != pid1 {
		return d
	}
	// unshare forks drainit after creating the namespace; drainit is its only child.
	d.pid = 0
	deadline := time.Now().Add(waitTimeout)
	for d.pid == 0 {
		if kids := childrenOf(cmd.Process.Pid); len(kids) > 0 {
			d.pid = kids[0]
			break
		}
		select {
		case <-d.exited:
			return d
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("unshare (pid %d) started no child within %s\n%s", cmd.Process.Pid, waitTimeout, d.dump())
		}
		time.Sleep(pollEvery)
	}
	return d
}

// watch wraps a started drainit (cmd) whose output stdout and stderr read: it collects its exit
// status, and kills it with everything it started when the test ends. drainit's pid is the
// process's own; in pid1 mode the caller replaces it with unshare's child.
func watch(t *testing.T, m mode, cmd *exec.Cmd, stdout, stderr *lineLog) *drainitRun {
	d := &drainitRun{
		t: t, mode: m, cmd: cmd, stdout: stdout, stderr: stderr,
		pid:    cmd.Process.Pid, // a launcher execs drainit in its own process
		exited: make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait() // a non-zero status is an error here; status() reads it from ProcessState
		d.state = cmd.ProcessState
		close(d.exited)
	}()
	t.Cleanup(d.kill)
	return d
}

// cleanEnv is the test's environment without DRAINIT_* variables, so that a developer's own
// settings cannot change what a test sees.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DRAINIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// signal sends sig to drainit.
func (d *drainitRun) signal(sig syscall.Signal) {
	d.t.Helper()
	if d.pid <= 1 {
		d.t.Fatalf("drainit's pid is unknown (it exited at once?); not sending %v\n%s", sig, d.dump())
	}
	if err := syscall.Kill(d.pid, sig); err != nil {
		d.t.Fatalf("sending %v to drainit (pid %d): %v", sig, d.pid, err)
	}
}

// running reports whether drainit has not exited yet.
func (d *drainitRun) running() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// exitStatus is how drainit ended.
type exitStatus struct {
	code int            // the exit code; meaningful when sig is 0
	sig  syscall.Signal // the signal that killed drainit, 0 when it exited
}

func (s exitStatus) String() string {
	if s.sig != 0 {
		return "killed by " + s.sig.String()
	}
	return "exit " + strconv.Itoa(s.code)
}

// wait waits for drainit to exit and for its stdout and stderr to be closed by every process
// that had them, and returns its status. Output left open after drainit exited means a process
// it started outlived it, which drainit must never allow: that is reported as a test error.
func (d *drainitRun) wait(timeout time.Duration) exitStatus {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(timeout):
		d.t.Fatalf("drainit did not exit within %s\n%s", timeout, d.dump())
	}
	for _, l := range []*lineLog{d.stdout, d.stderr} {
		if !l.waitEOF(drainTimeout) {
			d.t.Errorf("drainit's %s is still open %s after it exited: a process it started outlived it\n%s",
				l.name, drainTimeout, d.dump())
		}
	}
	return d.status()
}

// status reads drainit's status out of what cmd.Wait returned. In pid1 mode that is unshare's
// status, which passes drainit's exit code through. When drainit is killed by a signal, unshare
// (util-linux) re-raises the signal on itself; but for SIGKILL, which cannot be re-raised that
// way, util-linux 2.38 instead prints "unshare: sigprocmask unblock failed: Invalid argument" and
// exits 1. Both are turned back into "killed by"; any other unshare complaint fails the test.
func (d *drainitRun) status() exitStatus {
	d.t.Helper()
	ws, ok := d.state.Sys().(syscall.WaitStatus)
	if !ok {
		d.t.Fatalf("no wait status: %v", d.state)
	}
	if ws.Signaled() {
		return exitStatus{sig: ws.Signal()}
	}
	if d.mode == pid1 {
		for _, l := range d.stderr.all() {
			if !strings.HasPrefix(l, "unshare: ") {
				continue
			}
			if strings.Contains(l, "sigprocmask unblock failed") && ws.ExitStatus() == 1 {
				return exitStatus{sig: syscall.SIGKILL}
			}
			d.t.Fatalf("unshare failed (status %d): %s\n%s", ws.ExitStatus(), l, d.dump())
		}
	}
	return exitStatus{code: ws.ExitStatus()}
}

// kill ends drainit and everything it started, if still running. In pid1 mode SIGKILL to
// drainit is enough: the kernel kills the whole namespace with its init. As a subreaper, drainit
// is stopped first, so that it neither reaps nor starts anything while its descendants are
// killed.
func (d *drainitRun) kill() {
	if d.running() && d.pid > 1 {
		if d.mode == pid1 {
			_ = syscall.Kill(d.pid, syscall.SIGKILL)
		} else {
			_ = syscall.Kill(d.pid, syscall.SIGSTOP)
			for range 3 {
				for _, p := range descendantsOf(d.pid) {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			_ = syscall.Kill(d.pid, syscall.SIGKILL)
		}
	} else if d.running() {
		_ = d.cmd.Process.Kill()
	}
	select {
	case <-d.exited:
	case <-time.After(waitTimeout):
		d.t.Errorf("drainit (pid %d) survived SIGKILL for %s", d.pid, waitTimeout)
	}
	d.stdout.close()
	d.stderr.close()
}

// dump is drainit's output so far, for failure messages.
func (d *drainitRun) dump() string {
	return "--- stdout:\n" + tail(d.stdout.all()) + "--- stderr:\n" + tail(d.stderr.all())
}

func tail(lines []string) string {
	const max = 60
	var b strings.Builder
	if len(lines) > max {
		fmt.Fprintf(&b, "[... %d lines]\n", len(lines)-max)
		lines = lines[len(lines)-max:]
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// logEntry is one of drainit's JSON log lines.
type logEntry map[string]any

func (e logEntry) msg() string { s, _ := e["message"].(string); return s }

func (e logEntry) str(key string) string { s, _ := e[key].(string); return s }

// int returns a numeric field, and whether it is there.
func (e logEntry) int(key string) (int, bool) {
	f, ok := e[key].(float64)
	return int(f), ok
}

// time returns the entry's timestamp.
func (e logEntry) time() (time.Time, error) {
	return time.Parse("2006-01-02T15:04:05.000Z07:00", e.str("time"))
}

// logs parses drainit's JSON log lines from stderr so far; other lines are left out.
func (d *drainitRun) logs() []logEntry {
	var out []logEntry
	for _, l := range d.stderr.all() {
		var e logEntry
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &e) == nil && e["logger"] == "drainit" {
			out = append(out, e)
		}
	}
	return out
}

// lineLog collects the lines read from a stream, and lets tests wait for lines with deadlines.
type lineLog struct {
	name string
	r    io.Closer

	mu      sync.Mutex
	lines   []string
	eof     bool
	changed chan struct{} // closed, and replaced, whenever a line or EOF arrives
}

// newLineLog reads r until EOF or an error (a pty master reports EIO once the slave side is
// closed everywhere), trimming the "\r" a terminal adds.
func newLineLog(name string, r io.ReadCloser) *lineLog {
	l := &lineLog{name: name, r: r, changed: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, strings.TrimRight(sc.Text(), "\r"))
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.eof = true
		close(l.changed)
		l.mu.Unlock()
	}()
	return l
}

// close stops reading (unblocking the reader if the stream is still open).
func (l *lineLog) close() { _ = l.r.Close() }

// all returns the lines read so far.
func (l *lineLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// await waits until ok accepts the lines read so far, and returns them. It fails the test when
// the stream ends or timeout passes first; what says what was awaited.
func (l *lineLog) await(t *testing.T, timeout time.Duration, what string, ok func(lines []string) bool) []string {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		lines, eof, ch := append([]string(nil), l.lines...), l.eof, l.changed
		l.mu.Unlock()
		if ok(lines) {
			return lines
		}
		if eof {
			t.Fatalf("%s ended before %s\n%s", l.name, what, tail(lines))
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("no %s within %s on %s\n%s", what, timeout, l.name, tail(lines))
		}
	}
}

// awaitLine waits for a line match accepts and returns the first such line.
func (l *lineLog) awaitLine(t *testing.T, what string, match func(string) bool) string {
	t.Helper()
	var found string
	l.await(t, waitTimeout, what, func(lines []string) bool {
		for _, s := range lines {
			if match(s) {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

// awaitExact waits for the line want.
func (l *lineLog) awaitExact(t *testing.T, want string) {
	t.Helper()
	l.awaitLine(t, fmt.Sprintf("line %q", want), func(s string) bool { return s == want })
}

// awaitPrefix waits for a line starting with prefix and returns the rest of it.
func (l *lineLog) awaitPrefix(t *testing.T, prefix string) string {
	t.Helper()
	s := l.awaitLine(t, fmt.Sprintf("line starting %q", prefix), func(s string) bool { return strings.HasPrefix(s, prefix) })
	return strings.TrimPrefix(s, prefix)
}

// awaitPid waits for a line "PREFIX PID" (testapp's "ready app 12") and returns the pid.
func (l *lineLog) awaitPid(t *testing.T, prefix string) int {
	t.Helper()
	rest := l.awaitPrefix(t, prefix+" ")
	pid, err := strconv.Atoi(strings.Fields(rest + " x")[0])
	if err != nil {
		t.Fatalf("%s line %q has no pid", l.name, prefix+" "+rest)
	}
	return pid
}

// waitEOF waits until every writer has closed the stream; false if timeout passed first.
func (l *lineLog) waitEOF(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		eof, ch := l.eof, l.changed
		l.mu.Unlock()
		if eof {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		}
	}
}

// contains reports whether line has been read.
func contains(lines []string, line string) bool {
	for _, l := range lines {
		if l == line {
			return true
		}
	}
	return false
}

// waitUntil polls cond until it holds, failing the test after timeout. It is for state only
// /proc shows (process states, parents); output has its own waits.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not true within %s: %s", timeout, what)
		}
		time.Sleep(pollEvery)
	}
}

// procStat reads a process's state letter and parent pid from /proc/PID/stat; ok is false once
// the process is gone (reaped).
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name may hold spaces and parentheses: count fields from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return f[0][0], ppid, err == nil
}

// exists reports whether pid is still in the process table (running, stopped or a zombie).
func exists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return !errors.Is(err, os.ErrNotExist)
}

// allPids lists every process in this PID namespace's /proc.
func allPids() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// childrenOf lists pid's children, zombies included.
func childrenOf(pid int) []int {
	var out []int
	for _, p := range allPids() {
		if _, ppid, ok := procStat(p); ok && ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// descendantsOf lists every process below pid in the process tree.
func descendantsOf(pid int) []int { return proc.Descendants("/proc", pid) }

// pidNamespace names the PID namespace pid lives in ("pid:[4026532…]"), "" if it is gone.
func pidNamespace(pid int) string {
	ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return ns
}

// namespaceMembers lists the host pids of the processes in the PID namespace of pid, itself
// included.
func namespaceMembers(pid int) []int {
	ns := pidNamespace(pid)
	if ns == "" {
		return nil
	}
	var out []int
	for _, p := range allPids() {
		if pidNamespace(p) == ns {
			out = append(out, p)
		}
	}
	return out
}
