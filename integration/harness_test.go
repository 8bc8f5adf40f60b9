package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/pod"
	"github.com/drainit/drainit/integration/testbin"
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"

	"golang.org/x/sys/unix"
)

// The binaries TestMain has built for the whole package.
var (
	drainitBin string
	testappBin string
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
	// `testapp die QUIT` and `die ABRT` would otherwise leave core files wherever the kernel's
	// core_pattern puts them; children inherit the limit.
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CORE, &lim) == nil {
		lim.Cur = 0
		_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &lim)
	}
	catchIgnored()
	return m.Run()
}

// catchIgnored catches, and drops, the signals this process was started with ignored that its
// children would inherit ignored: HUP and INT (the Go runtime keeps an inherited SIG_IGN of
// them) and TSTP, TTIN, TTOU and CONT (it leaves them alone until caught); it handles the rest
// itself, which a child gets at the default. Caught, they reach the children at the default
// too, so that the drainits the tests start without start() (startExact, the terminal tests)
// do not get `nohup go test`'s HUP ignored, while this process stays as immune to them as the
// runner meant it to be. (start() sets its runs' signals exactly: sigconf.)
func catchIgnored() {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	var mask uint64
	for l := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			mask, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	var catch []os.Signal
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGCONT} {
		if mask&(1<<(sig-1)) != 0 {
			catch = append(catch, sig)
		}
	}
	if len(catch) > 0 {
		signal.Notify(make(chan os.Signal, 1), catch...)
	}
}

// requireRoot skips (or, under CI=true, fails) a test that needs to create a PID namespace: root,
// unshare, and a kernel and sandbox that allow it.
func requireRoot(t *testing.T) {
	t.Helper()
	if err := pod.Available(); err != nil {
		testenv.SkipUnlessCI(t, err.Error())
	}
}

// mode is how drainit runs: as PID 1 of its own PID namespace, as in a container, or as an
// ordinary process that makes itself a child subreaper, or as a container's first process in a
// PID namespace it shares (sandbox).
type mode int

const (
	pid1 mode = iota
	subreaper
	sharedPID
)

func (m mode) String() string {
	return [...]string{pid1: "pid1", subreaper: "subreaper", sharedPID: "sharedpid"}[m]
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
	// in its own process, e.g. `sh -c 'trap "" HUP; exec "$@"'`. In pid1 mode it runs outside the
	// namespace (pod.Fork).
	launcher []string
	bin      string // drainit's binary; drainitBin when empty
	// logGone: the reader of drainit's stderr reads its first line and closes the pipe, as a log
	// collector that went away; drainitRun.stderr then holds that line only.
	logGone bool
	// netns, in sharedPID mode: the pod has a network namespace of its own (else the host's, as
	// with hostNetwork).
	netns bool
	// logStuck: nothing reads drainit's stderr, a pipe, until the test calls readLog: a log
	// collector that stopped reading without going away.
	logStuck bool
	// logSocket: drainit's stderr is a stream socket (a journal's), with the least send buffer
	// Linux allows, not a pipe; drainitRun.errSock is a copy of drainit's end.
	logSocket bool
	// logRate, where not 0, is how many bytes a second drainit's stderr is read at, at most: a
	// log collector that does not keep up.
	logRate int
	// logPipe, where not 0, is the capacity of drainit's stderr pipe (Linux's default: 64 KiB;
	// its least: a page), so that a slow reader gets to the end of it within drainTimeout.
	logPipe int
	// ignore and block are the signals ignored and blocked as the run starts (before the
	// launcher, which may change them): exactly these, none when empty, whatever the test
	// runner's own are (`nohup go test` ignores HUP). See sigconf.
	ignore, block []syscall.Signal
}

// sigconf is the argv prefix every run starts with: testapp's _sigconf, which sets exactly the
// signals of s.ignore ignored and those of s.block blocked, and execs the rest. A test's drainit
// (and so its app) would otherwise start with whatever the runner had: the children of a Go
// program inherit an ignored HUP or INT (the runtime keeps them ignored), an ignored TSTP, TTIN,
// TTOU or CONT, and the forking thread's mask.
func sigconf(s spec) []string {
	list := func(sigs []syscall.Signal) string {
		if len(sigs) == 0 {
			return "-"
		}
		names := make([]string, len(sigs))
		for i, sig := range sigs {
			names[i] = strconv.Itoa(int(sig))
		}
		return strings.Join(names, ",")
	}
	return []string{testappBin, "_sigconf", list(s.ignore), list(s.block), "--"}
}

// drainitRun is a running (or finished) drainit.
type drainitRun struct {
	t    *testing.T
	mode mode
	cmd  *exec.Cmd
	// pid is drainit's pid as this process sees it: unshare's child in pid1 mode. Zero when
	// drainit exited before it could be found.
	pid    int
	stdout *lines.Log
	stderr *lines.Log
	exited chan struct{} // closed when cmd.Wait has returned
	state  *os.ProcessState
	// sandbox, in sharedPID mode, is the pod drainit runs in, for other containers' processes.
	sandbox sandbox
	// errPipe is the read end of drainit's stderr; readLog starts reading it (spec.logStuck).
	errPipe *os.File
	readLog func()
	// errSock, with spec.logSocket, is a copy of drainit's end of its stderr socket.
	errSock *os.File
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
	bin := s.bin
	if bin == "" {
		bin = drainitBin
	}
	drainit := append(append(append([]string{bin}, s.args...), "--"), s.app...)
	var sys *syscall.SysProcAttr
	var sb sandbox
	if s.mode == sharedPID {
		sb = startSandbox(t, s.netns)
		s.launcher = append(sb.enter(false), s.launcher...)
	}
	if s.mode == pid1 {
		requireRoot(t)
		// pod.Fork: unshare forks drainit into the namespace and passes its status on (status),
		// and the launcher, in front of unshare, stays outside.
		l, err := pod.Prepare(pod.Fork, drainit)
		if err != nil {
			t.Fatal(err)
		}
		drainit, sys = l.Argv, l.Sys
	}
	argv := append(append(sigconf(s), s.launcher...), drainit...)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = sys
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), s.env...)
	outR, outW := pipe(t)
	errR, errW := pipe(t)
	if s.logPipe > 0 {
		if _, err := unix.FcntlInt(errW.Fd(), unix.F_SETPIPE_SZ, s.logPipe); err != nil {
			t.Fatalf("setting the stderr pipe's capacity to %d: %v", s.logPipe, err)
		}
	}
	var errSock *os.File
	if s.logSocket {
		errR.Close()
		errW.Close()
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		_ = unix.SetsockoptInt(fds[1], unix.SOL_SOCKET, unix.SO_SNDBUF, 0) // the least: a few KiB
		errR, errW = os.NewFile(uintptr(fds[0]), "stderr-read"), os.NewFile(uintptr(fds[1]), "stderr")
		dup, err := unix.FcntlInt(errW.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		errSock = os.NewFile(uintptr(dup), "stderr-copy")
		t.Cleanup(func() { errSock.Close() })
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err := cmd.Start()
	// Only the child keeps the write ends, so EOF means every process that inherited them is gone.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		t.Fatalf("starting %q: %v", argv, err)
	}
	var stderr io.ReadCloser = errR
	readLog := func() {}
	if s.logStuck {
		g := &gatedReader{ReadCloser: errR, open: make(chan struct{})}
		stderr, readLog = g, sync.OnceFunc(func() { close(g.open) })
	}
	if s.logRate > 0 {
		stderr = &pacedReader{ReadCloser: stderr, rate: s.logRate}
	}
	if s.logGone {
		first, err := bufio.NewReader(errR).ReadString('\n')
		errR.Close()
		if err != nil {
			t.Fatalf("drainit's first log line: %q, %v", first, err)
		}
		stderr = io.NopCloser(strings.NewReader(first))
	}
	d := watch(t, s.mode, cmd, lines.Read("stdout", outR), lines.Read("stderr", stderr))
	d.sandbox = sb
	d.errPipe, d.readLog, d.errSock = errR, readLog, errSock
	t.Cleanup(readLog) // the log's reader ends only once it has read
	if s.mode == subreaper {
		return d
	}
	// unshare (nsenter) forks drainit after creating (entering) the namespace; drainit is its
	// only child (0 if drainit has already exited).
	if d.pid, err = pod.PID1(pod.Fork, cmd.Process.Pid, d.exited, waitTimeout); err != nil {
		t.Fatalf("%v\n%s", err, d.dump())
	}
	return d
}

// pipe is os.Pipe, failing the test when it fails.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// sandbox is a pod's sandbox for the sharedPID mode: PID 1 of a PID namespace (and with net of
// a network namespace of its own, loopback up), into which processes are started as the
// containers of a pod with shareProcessNamespace are (enter). PID 1 is testapp signals, which
// records what it gets: it must get nothing, checked as the test ends.
type sandbox struct {
	pid int
	net bool
}

func startSandbox(t *testing.T, net bool) sandbox {
	t.Helper()
	requireRoot(t)
	argv := []string{testappBin, "signals"}
	if net {
		argv = append([]string{testappBin, "_netns", "--"}, argv...)
	}
	out := lines.New("sandbox")
	p, err := pod.Start(argv, pod.Options{Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	out.AwaitPrefix(t, waitTimeout, "ready app ")
	t.Cleanup(func() {
		if got := out.Count(func(l string) bool { return strings.HasPrefix(l, "got ") }); got > 0 {
			t.Errorf("the sandbox's process, PID 1 of the shared namespace, got signals:\n%s", out.Tail(20))
		}
		p.Kill()
	})
	return sandbox{pid: p.PID, net: net}
}

// enter is a launcher that starts a command the way runc starts a container's first process in
// the pod: in the sandbox's namespaces, with its /proc, from outside them (nsenter forks into
// them and waits: the command's parent is outside, getppid is 0 there), leading a session of its
// own (setsid; with ctty its stdin is made its controlling terminal).
func (s sandbox) enter(ctty bool) []string {
	argv := []string{"nsenter", "--target", strconv.Itoa(s.pid), "--pid", "--mount"}
	if s.net {
		argv = append(argv, "--net")
	}
	argv = append(argv, "--", "setsid")
	if ctty {
		argv = append(argv, "--ctty")
	}
	return argv
}

// gatedReader reads nothing until open is closed.
type gatedReader struct {
	io.ReadCloser
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.ReadCloser.Read(p)
}

// pacedReader reads at rate bytes a second at most, in reads of a twentieth of that, from its
// first read on.
type pacedReader struct {
	io.ReadCloser
	rate  int
	start time.Time
	read  int
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	// The reader's pace, which the test is about: no wait for an event.
	if ahead := time.Duration(p.read)*time.Second/time.Duration(p.rate) - time.Since(p.start); ahead > 0 {
		time.Sleep(ahead)
	}
	n, err := p.ReadCloser.Read(b[:min(len(b), max(p.rate/20, 1))])
	p.read += n
	return n, err
}

// watch wraps a started drainit (cmd) whose output stdout and stderr read: it collects its exit
// status, and kills it with everything it started when the test ends. drainit's pid is the
// process's own; in pid1 mode the caller replaces it with unshare's child.
func watch(t *testing.T, m mode, cmd *exec.Cmd, stdout, stderr *lines.Log) *drainitRun {
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

// appPID is the app's pid as this process numbers it (in pid1 mode the app prints its own
// namespace's): drainit's one child, which the test expects to be the app alone.
func (d *drainitRun) appPID() int {
	d.t.Helper()
	kids := proc.Children("/proc", d.pid)
	if len(kids) != 1 {
		d.t.Fatalf("drainit's children %v, want the app alone\n%s", kids, d.dump())
	}
	return kids[0]
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
	for _, l := range []*lines.Log{d.stdout, d.stderr} {
		if !l.WaitEOF(drainTimeout) {
			d.t.Errorf("drainit's %s is still open %s after it exited: a process it started outlived it\n%s",
				l.Name(), drainTimeout, d.dump())
		}
	}
	return d.status()
}

// status reads drainit's status out of what cmd.Wait returned. In pid1 mode that is unshare's
// status, which passes drainit's own on, signals included (pod.ForkStatus says how); an unshare
// that failed itself fails the test.
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
		code, sig, err := pod.ForkStatus(ws, d.stderr.Texts())
		if err != nil {
			d.t.Fatalf("%v\n%s", err, d.dump())
		}
		return exitStatus{code: code, sig: sig}
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
				for _, p := range proc.Descendants("/proc", d.pid) {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			_ = syscall.Kill(d.pid, syscall.SIGKILL)
			if d.mode == sharedPID {
				// nsenter stops itself when drainit stops, and resumes to reap it (killed instead,
				// it would leave drainit to the machine's init).
				_ = d.cmd.Process.Signal(syscall.SIGCONT)
			}
		}
	} else if d.running() {
		_ = d.cmd.Process.Kill()
	}
	select {
	case <-d.exited:
	case <-time.After(waitTimeout):
		d.t.Errorf("drainit (pid %d) survived SIGKILL for %s", d.pid, waitTimeout)
	}
	_ = d.stdout.Close()
	_ = d.stderr.Close()
}

// dump is drainit's output so far, for failure messages.
func (d *drainitRun) dump() string {
	return "--- stdout:\n" + d.stdout.Tail(60) + "--- stderr:\n" + d.stderr.Tail(60)
}

// logEntry is one of drainit's JSON log lines.
type logEntry map[string]any

func (e logEntry) msg() string { s, _ := e["message"].(string); return s }

func (e logEntry) str(key string) string { s, _ := e[key].(string); return s }

// strs returns a field that is a list of strings, nil where it is not.
func (e logEntry) strs(key string) []string { return stringsOf(e[key]) }

// stringsOf is the strings of a decoded JSON list, nil where v is not one.
func stringsOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// listeners returns a field of listeners grouped by why ({"why": ["tcp …", …]}, drainit's
// not_watched and unwatchable), each as "tcp …: why".
func (e logEntry) listeners(key string) []string {
	byWhy, _ := e[key].(map[string]any)
	var out []string
	for why, list := range byWhy {
		for _, l := range stringsOf(list) {
			out = append(out, l+": "+why)
		}
	}
	return out
}

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
	for _, l := range d.stderr.Texts() {
		var e logEntry
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &e) == nil && e["logger"] == "drainit" {
			out = append(out, e)
		}
	}
	return out
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
