package hooks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
)

// helperHook is an exec hook running the test binary's helper in mode args.
func helperHook(t *testing.T, name string, args ...string) Hook {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(append([]string{self, "hooks-helper"}, args...))
	h, err := parseExec(name, string(spec), children())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// pidFromLog waits for an output line "<word> <pid>" and returns the pid.
func pidFromLog(t *testing.T, buf *logBuf, word string) int {
	t.Helper()
	var pid int
	waitFor(t, "output line "+word, func() bool {
		for _, ev := range buf.events(t) {
			if rest, ok := strings.CutPrefix(fmt.Sprint(ev["message"]), word+" "); ok && ev["stream"] != nil {
				pid, _ = strconv.Atoi(rest)
				return true
			}
		}
		return false
	})
	return pid
}

// gone reports whether pid is dead: no such process, a zombie nobody has reaped yet, or a
// process already in exit (PF_EXITING: it has released its files and can never run its own code
// again, but the kernel has not made it a zombie yet).
func gone(pid int) bool {
	st, err := proc.ReadStat("/proc", pid)
	return err != nil || st.Gone()
}

// Through RunAll, as the supervisor runs it: each output line is logged on RunAll's logger.
func TestExecSuccessLogsEachLineTagged(t *testing.T) {
	t.Parallel()
	log, buf := newLog()
	RunAll(context.Background(), log.With().Str("phase", "offline hooks").Logger(), time.Minute,
		[]Hook{helperHook(t, "offline-exec", "out", "0")})
	if buf.find(t, map[string]any{"hook": "offline-exec", "message": "hook done"}) == nil {
		t.Fatalf("hook did not succeed:\n%.2000s", buf)
	}
	for _, want := range []map[string]any{
		{"hook": "offline-exec", "stream": "stdout", "message": "out one", "phase": "offline hooks"},
		{"hook": "offline-exec", "stream": "stderr", "message": "err two", "phase": "offline hooks"},
		{"hook": "offline-exec", "stream": "stdout", "message": strings.Repeat("y", maxLine)},
		{"hook": "offline-exec", "stream": "stdout", "message": strings.Repeat("y", 5000-maxLine)},
	} {
		if buf.find(t, want) == nil {
			t.Errorf("no log event with %.80v\n%.2000s", want, buf)
		}
	}
}

// A hook that floods its output gets maxOutput of it into drainit's log, both streams
// together, and a count of the rest: the log is shared with the stop sequence's own lines, which
// must not wait behind it on a log reader that falls behind. The rest is still read: the hook
// runs to its end and succeeds.
func TestExecOutputBounded(t *testing.T) {
	t.Parallel()
	const lines = 20000 // of 100 bytes: 2 MB, 15 times the limit
	log, buf := newLog()
	RunAll(context.Background(), log, time.Minute, []Hook{helperHook(t, "chatty", "flood", strconv.Itoa(lines))})
	if buf.find(t, map[string]any{"hook": "chatty", "message": "hook done"}) == nil {
		t.Fatalf("the hook did not succeed:\n%.2000s", buf)
	}
	logged, size := 0, 0
	for _, ev := range buf.events(t) {
		if ev["stream"] != nil {
			logged++
			size += len(fmt.Sprint(ev["message"]))
		}
	}
	if cost := size + logged*lineCost; cost > maxOutput || logged < maxOutput/(99+lineCost)-1 {
		t.Errorf("%d lines, %d bytes of the hook's output logged; want all that fit in %d bytes at %d more a line", logged, size, maxOutput, lineCost)
	}
	if buf.find(t, map[string]any{"hook": "chatty", "level": "warn", "limit_bytes": float64(maxOutput)}) == nil {
		t.Errorf("no warning when the limit was reached\n%.2000s", buf)
	}
	rest := buf.find(t, map[string]any{"hook": "chatty", "message": "hook output not logged"})
	if rest == nil || rest["lines"] != float64(lines-logged) || rest["bytes"] != float64(99*(lines-logged)) {
		t.Errorf("the count of what was not logged: %v, want %d lines of 99 bytes", rest, lines-logged)
	}
}

func TestExecFailureStatus(t *testing.T) {
	t.Parallel()
	log, buf := newLog()
	err := helperHook(t, "post-stop-exec", "out", "3").Run(log.WithContext(context.Background()))
	if err == nil || !strings.Contains(err.Error(), `"post-stop-exec"`) || !strings.Contains(err.Error(), "exited with status 3") {
		t.Errorf("Run = %v, want the hook's name and status 3", err)
	}
	if buf.find(t, map[string]any{"stream": "stderr", "message": "err two"}) == nil {
		t.Errorf("a failing hook's output was not logged:\n%.1000s", buf)
	}

	// A bare name is looked up in PATH, like a shell does.
	h, err := parseExec("by-signal", `["sh", "-c", "kill -KILL $$"]`, children())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(log.WithContext(context.Background())); err == nil || !strings.Contains(err.Error(), "killed by SIGKILL") {
		t.Errorf("Run = %v, want killed by SIGKILL", err)
	}
}

func TestExecMissingBinary(t *testing.T) {
	t.Parallel()
	log, _ := newLog()
	// Files that exist but cannot run: execve's error is named with the file, and explained as
	// the app's is (internal/execerr): an ENOENT with the interpreter it is about.
	dir := t.TempDir()
	for name, text := range map[string]string{"bad-interp": "#!/nonexistent/interp\n", "bad-format": "\x00\x01\x02"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for spec, want := range map[string]string{
		"/nonexistent/deregister --id x": "no such file or directory",
		"drainit-test-no-such-command":   "not found in $PATH",
		dir + "/bad-interp":              dir + "/bad-interp: no such file or directory: the interpreter its #! line names, /nonexistent/interp, does not exist",
		dir + "/bad-format":              dir + "/bad-format: exec format error: not a program, and no #! line says what runs it",
	} {
		h, err := parseExec("offline-exec", spec, children())
		if err != nil {
			t.Fatal(err)
		}
		err = h.Run(log.WithContext(context.Background()))
		if err == nil || !strings.Contains(err.Error(), "cannot start") || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), `"offline-exec"`) {
			t.Errorf("%s: Run = %v, want a cannot-start error with %q", spec, err, want)
		}
	}
}

func TestExecWithoutChildrenStartsNothing(t *testing.T) {
	t.Parallel()
	h, err := parseExec("checked-only", "/bin/true", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("Run = %v, want not started", err)
	}
}

// A hook whose child ignores SIGTERM: the whole group gets SIGTERM, then SIGKILL after the
// grace, and both processes are dead when Run returns; whether or not the child holds the hook's
// output (quiet-tree: it does not, and only the group tells that it is still there).
func TestExecCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"tree", "quiet-tree"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			log, buf := newLog()
			ctx, cancel := context.WithCancel(log.WithContext(context.Background()))
			defer cancel()
			done := runAsync(ctx, helperHook(t, "offline-exec", mode))
			child, gc := pidFromLog(t, buf, "child"), pidFromLog(t, buf, "gc")
			t.Cleanup(func() { _ = unix.Kill(gc, unix.SIGKILL) })

			cancelled := time.Now()
			cancel()
			err := result(t, done)
			took := time.Since(cancelled)
			if !gone(child) || !gone(gc) {
				t.Errorf("after Run returned: hook process gone %v, its child (ignores SIGTERM) gone %v", gone(child), gone(gc))
			}
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled after") ||
				!strings.Contains(err.Error(), "SIGTERM, then SIGKILL") {
				t.Errorf("Run = %v, want it cancelled, and stopped with SIGTERM then SIGKILL", err)
			}
			if took < termGrace {
				t.Errorf("SIGKILL came %v after the end of ctx, before the %v grace", took, termGrace)
			}
		})
	}
}

// At the last deadline (the post-stop hooks', which the runtime's SIGKILL follows) the group gets
// SIGKILL at once, with no SIGTERM grace: the time is the hook's, and then drainit's to exit.
func TestExecLastDeadlineKillsAtOnce(t *testing.T) {
	t.Parallel()
	log, buf := newLog()
	const timeout = 200 * time.Millisecond
	ctx, cancel := context.WithDeadlineCause(log.WithContext(context.Background()), time.Now().Add(timeout), ErrLastDeadline)
	defer cancel()
	done := runAsync(ctx, helperHook(t, "post-stop-exec", "tree"))
	child, gc := pidFromLog(t, buf, "child"), pidFromLog(t, buf, "gc")
	t.Cleanup(func() { _ = unix.Kill(gc, unix.SIGKILL) })
	<-ctx.Done()
	ended := time.Now()
	err := result(t, done)
	took := time.Since(ended)
	if !gone(child) || !gone(gc) {
		t.Errorf("after Run returned: hook process gone %v, its child (ignores SIGTERM) gone %v", gone(child), gone(gc))
	}
	if !errors.Is(err, ErrLastDeadline) || !strings.HasSuffix(err.Error(), "its process group got SIGKILL") {
		t.Errorf("Run = %v, want it ended by the last deadline, with SIGKILL alone", err)
	}
	// SIGKILL at once: Run returns within the wait after it, not after the SIGTERM grace.
	if took >= termGrace {
		t.Errorf("Run returned %v after the last deadline, as if SIGTERM had been given its %v grace", took, termGrace)
	}
}

func TestExecTimeout(t *testing.T) {
	t.Parallel()
	log, buf := newLog()
	const timeout = 200 * time.Millisecond
	h := helperHook(t, "offline-exec", "sleep")
	// The clock starts before the deadline is set, which can then come no sooner than timeout
	// after it (started after, it read 199.8 ms once).
	start := time.Now()
	ctx, cancel := context.WithTimeout(log.WithContext(context.Background()), timeout)
	defer cancel()
	err := h.Run(ctx)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after") {
		t.Errorf("Run = %v, want a timeout", err)
	}
	if strings.Contains(fmt.Sprint(err), "SIGKILL") {
		t.Errorf("Run = %v: SIGKILL sent to a hook that ends on SIGTERM", err)
	}
	if took < timeout || took > timeout+termGrace+killWait+5*time.Second {
		t.Errorf("Run took %v with a timeout of %v", took, timeout)
	}
	started := buf.find(t, map[string]any{"message": "hook started"})
	if pid, ok := started["pid"].(float64); !ok || !gone(int(pid)) {
		t.Errorf("hook process (started: %v) still running after Run returned", started)
	}
}

func TestExecInheritsEnvAndDir(t *testing.T) {
	t.Setenv("HOOKS_TEST_VALUE", "inherited")
	log, buf := newLog()
	if err := helperHook(t, "online-exec", "env", "HOOKS_TEST_VALUE").Run(log.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	for _, want := range []string{"env=inherited", "cwd=" + wd} {
		if buf.find(t, map[string]any{"message": want}) == nil {
			t.Errorf("no output line %q:\n%s", want, buf)
		}
	}
}

// A hook that exits but leaves a process holding its output: Run returns (the leftover is
// not waited for) with the hook's own status, and says so in the log.
func TestExecLeftoverDoesNotHoldRun(t *testing.T) {
	t.Parallel()
	log, buf := newLog()
	done := runAsync(log.WithContext(context.Background()), helperHook(t, "online-exec", "leave"))
	err := result(t, done)
	left := pidFromLog(t, buf, "leftover")
	t.Cleanup(func() { _ = unix.Kill(left, unix.SIGKILL) })
	if err != nil {
		t.Errorf("Run = %v, want the hook's own success", err)
	}
	if buf.find(t, map[string]any{"hook": "online-exec", "level": "warn"}) == nil {
		t.Errorf("leftover not reported:\n%s", buf)
	}
}

// HTTP hooks reach loopback addresses directly even with HTTP_PROXY set, and go through the
// proxy for other hosts. The environment is the child process's own: net/http reads it once.
// TestHTTPNeverProxied: a container's HTTP_PROXY is for the app's traffic; a hook's call goes
// straight to its target even with HTTP_PROXY set (the helper process runs with it).
func TestHTTPNeverProxied(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var hits []string
	record := func(who string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits = append(hits, who+" "+r.Method+" "+r.URL.String())
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}
	}
	target := httptest.NewServer(record("target"))
	defer target.Close()
	proxy := httptest.NewServer(record("proxy"))
	defer proxy.Close()
	// A second target on another loopback address, so "loopback goes direct" is not the reason.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.SkipUnlessCI(t, fmt.Sprintf("no 127.0.0.2: %v", err))
	}
	other := &httptest.Server{Listener: ln, Config: &http.Server{Handler: record("other")}}
	other.Start()
	defer other.Close()

	log, buf := newLog()
	for _, u := range []string{target.URL + "/deregister", other.URL + "/deregister"} {
		if err := helperHook(t, "h", "http", proxy.URL, u).Run(log.WithContext(context.Background())); err != nil {
			t.Fatalf("call to %s with HTTP_PROXY set: %v\n%s", u, err, buf)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := "target POST /deregister|other POST /deregister"
	if got := strings.Join(hits, "|"); got != want {
		t.Errorf("requests seen: %s\nwant: %s", got, want)
	}
}

// inPIDNamespace marks the test binary's run inside the PID namespace that
// TestExecStopSparesReusedGroup makes.
const inPIDNamespace = "HOOKS_TEST_IN_PID_NAMESPACE"

// The hook's leader dies of the SIGTERM and is reaped; a process it started in a session of its
// own keeps its output open, so the SIGKILL a second later is due; meanwhile the group's id is
// free, and a stranger takes the leader's pid (forced through ns_last_pid, in a PID namespace of
// the test's own) and leads a group of that id. The SIGKILL must not reach it.
func TestExecStopSparesReusedGroup(t *testing.T) {
	if os.Getenv(inPIDNamespace) == "" {
		t.Parallel()
		if os.Geteuid() != 0 {
			testenv.SkipUnlessCI(t, "needs root: it forces a pid's reuse in a PID namespace of its own")
		}
		unshare, err := testenv.LookPath("unshare")
		if err != nil {
			testenv.SkipUnlessCI(t, err.Error())
		}
		cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", os.Args[0],
			"-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), inPIDNamespace+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("in a PID namespace of its own: %v\n%s", err, out)
		}
		return
	}

	log, buf := newLog()
	ctx, cancel := context.WithCancel(log.WithContext(context.Background()))
	defer cancel()
	done := runAsync(ctx, helperHook(t, "offline-exec", "setsid-hold"))
	leader, held := pidFromLog(t, buf, "leader"), pidFromLog(t, buf, "held")
	t.Cleanup(func() { _ = unix.Kill(held, unix.SIGKILL) })
	cancel()
	waitFor(t, "the hook's leader reaped", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(leader))
		return errors.Is(err, os.ErrNotExist)
	})
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(leader-1)), 0); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := syscall.ForkExec(self, []string{self, "hooks-helper", "sleep"},
		&syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Kill(stranger, unix.SIGKILL) })
	if stranger != leader {
		t.Fatalf("the stranger got pid %d, not the reaped leader's %d: reuse not forced", stranger, leader)
	}
	runErr := result(t, done)
	if gone(stranger) {
		t.Errorf("the stranger leading a group of the reaped hook's id was killed; Run = %v", runErr)
	}
}

// Without the leader's pidfd (and so on a kernel before Linux 6.9, which cannot signal a group
// through one) the group gets a signal by its id while the leader is unreaped, and after that
// through the members seen while it was: here a member that ignores SIGTERM still gets the
// SIGKILL once its leader has died of the SIGTERM and been reaped.
func TestExecGroupWithoutPidfd(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pid, exit, err := children().start(func() (int, error) {
		return syscall.ForkExec(self, []string{self, "hooks-helper", "tree"},
			&syscall.ProcAttr{Files: []uintptr{0, w.Fd(), 2}, Sys: &syscall.SysProcAttr{Setpgid: true}})
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Kill(-pid, unix.SIGKILL) })
	out := bufio.NewReader(r)
	var gc int
	if line, err := out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "gc ") {
		t.Fatalf("the hook said %q (%v), not gc PID", line, err)
	} else {
		gc, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "gc ")))
	}
	t.Cleanup(func() { _ = unix.Kill(gc, unix.SIGKILL) })
	if line, err := out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "child ") {
		t.Fatalf("the hook said %q (%v), not child PID", line, err)
	}

	p := &hookProcess{pid: pid, pidfd: -1, exit: exit}
	g := p.group()
	if g.byFD || len(g.known) != 1 || g.known[0].pid != gc {
		t.Fatalf("group without a pidfd: by pidfd %v, members seen %v; want the grandchild %d alone", g.byFD, g.known, gc)
	}
	if !g.signal(unix.SIGTERM) {
		t.Fatal("SIGTERM reached no member")
	}
	waitFor(t, "the leader reaped", func() bool { return len(exit) == 1 })
	if p.unreaped() || gone(gc) {
		t.Fatalf("after the SIGTERM: leader unreaped %v, grandchild (ignores SIGTERM) gone %v", p.unreaped(), gone(gc))
	}
	if !g.signal(unix.SIGKILL) {
		t.Fatal("SIGKILL reached no member once the leader was reaped")
	}
	waitFor(t, "the grandchild killed", func() bool { return gone(gc) })
	waitFor(t, "the group empty", func() bool { return groupEmpty(g) })
}
