package pod

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
)

func requirePods(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		testenv.SkipUnlessCI(t, err.Error())
	}
}

func TestStartIsPID1(t *testing.T) {
	requirePods(t)
	var out bytes.Buffer
	p, err := Start([]string{"sh", "-c", "echo $$; exit 7"}, Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	status, ok := p.Wait(10 * time.Second)
	if !ok || status != 7 {
		t.Fatalf("status %d, %v; want 7", status, ok)
	}
	if strings.TrimSpace(out.String()) != "1" {
		t.Fatalf("the command saw itself as pid %q, want 1", out.String())
	}
}

func TestSignalledStatus(t *testing.T) {
	requirePods(t)
	p, err := Start([]string{"sh", "-c", "sleep 60 & sleep 60"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if n := len(p.Processes()); n < 1 {
		t.Fatalf("%d processes seen in the namespace", n)
	}
	// SIGKILL from the parent namespace always reaches PID 1; the namespace dies with it.
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	status, ok := p.Wait(10 * time.Second)
	if !ok || status != 137 {
		t.Fatalf("status %d, %v; want 137", status, ok)
	}
}

// startLaunch starts l with stdout and stderr collected, and returns its wait status through a
// channel, so that the test can find PID 1 meanwhile.
func startLaunch(t *testing.T, l Launch) (cmd *exec.Cmd, out, errOut *bytes.Buffer, exited chan struct{}) {
	t.Helper()
	cmd = exec.Command(l.Argv[0], l.Argv[1:]...)
	cmd.SysProcAttr = l.Sys
	out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return cmd, out, errOut, exited
}

// Fork: the started process is unshare, PID 1 its child, and the exit code comes through.
func TestForkIsPID1(t *testing.T) {
	requirePods(t)
	l, err := Prepare(Fork, []string{"sh", "-c", "read x; echo $$; exit 7"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Argv[1:5], []string{"--pid", "--fork", "--mount-proc", "--kill-child"}) {
		t.Fatalf("Fork runs %q", l.Argv)
	}
	cmd := exec.Command(l.Argv[0], l.Argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid1, err := PID1(Fork, cmd.Process.Pid, nil, 10*time.Second)
	if err != nil || pid1 == cmd.Process.Pid || pid1 == 0 {
		t.Fatalf("PID1 = %d, %v; want unshare's child (unshare is %d)", pid1, err, cmd.Process.Pid)
	}
	stdin.Close() // the shell reads EOF and goes on
	_ = cmd.Wait()
	code, sig, err := ForkStatus(cmd.ProcessState.Sys().(syscall.WaitStatus), strings.Split(errOut.String(), "\n"))
	if err != nil || code != 7 || sig != 0 {
		t.Fatalf("ForkStatus = %d, %v, %v; want exit 7", code, sig, err)
	}
	if strings.TrimSpace(out.String()) != "1" {
		t.Fatalf("the command saw itself as pid %q, want 1", out.String())
	}
}

// Fork: a SIGKILLed PID 1 is reported as such, whichever way this unshare passes it on.
func TestForkKilled(t *testing.T) {
	requirePods(t)
	l, err := Prepare(Fork, []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, errOut, exited := startLaunch(t, l)
	pid1, err := PID1(Fork, cmd.Process.Pid, exited, 10*time.Second)
	if err != nil || pid1 == 0 {
		t.Fatalf("PID1 = %d, %v", pid1, err)
	}
	if err := syscall.Kill(pid1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("unshare did not exit after its child was SIGKILLed")
	}
	_, sig, err := ForkStatus(cmd.ProcessState.Sys().(syscall.WaitStatus), strings.Split(errOut.String(), "\n"))
	if err != nil || sig != syscall.SIGKILL {
		t.Fatalf("ForkStatus: %v, %v; want SIGKILL (unshare's stderr: %q)", sig, err, errOut)
	}
}

// PID1 gives up when the started process exits without a child.
func TestPID1Exited(t *testing.T) {
	cmd, _, _, exited := startLaunch(t, Launch{Argv: []string{"true"}})
	if pid, err := PID1(Fork, cmd.Process.Pid, exited, 10*time.Second); pid != 0 || err != nil {
		t.Fatalf("PID1 of a process that exited = %d, %v; want 0, nil", pid, err)
	}
	if pid, err := PID1(Clone, 1234, nil, time.Second); pid != 1234 || err != nil {
		t.Fatalf("PID1 with Clone = %d, %v; want the started process", pid, err)
	}
}

// Direct: the command itself is PID 1, with no unshare.
func TestDirectIsPID1(t *testing.T) {
	requirePods(t)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Prepare(Direct, []string{sh, "-c", "echo $$; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Argv[0] != sh {
		t.Fatalf("Direct runs %q, want the command alone", l.Argv)
	}
	cmd, out, _, exited := startLaunch(t, l)
	<-exited
	if cmd.ProcessState.ExitCode() != 3 || strings.TrimSpace(out.String()) != "1" {
		t.Fatalf("exit %d, pid %q; want 3 and 1", cmd.ProcessState.ExitCode(), out.String())
	}
}

// ForkStatus reads util-linux's ways of passing PID 1's end on; no root needed.
func TestForkStatus(t *testing.T) {
	exit := func(code int) syscall.WaitStatus { return syscall.WaitStatus(code << 8) }
	for _, c := range []struct {
		name   string
		ws     syscall.WaitStatus
		stderr []string
		code   int
		sig    syscall.Signal
		err    string
	}{
		{"exit code", exit(42), []string{`{"message":"drainit exiting"}`}, 42, 0, ""},
		{"signal re-raised", syscall.WaitStatus(syscall.SIGTERM), nil, 0, syscall.SIGTERM, ""},
		{"SIGKILL", exit(1), []string{"unshare: sigprocmask unblock failed: Invalid argument"}, 0, syscall.SIGKILL, ""},
		{"unshare failed", exit(1), []string{"unshare: unshare failed: Operation not permitted"}, 1, 0, "unshare failed (status 1): unshare: unshare failed"},
	} {
		code, sig, err := ForkStatus(c.ws, c.stderr)
		if code != c.code || sig != c.sig || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: ForkStatus = %d, %v, %v; want %d, %v, %q", c.name, code, sig, err, c.code, c.sig, c.err)
		}
	}
}

// The test process's PID namespace holds it and its child; a reaped process has none.
func TestInPIDNamespace(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	self, child := os.Getpid(), cmd.Process.Pid
	if ns := InPIDNamespace("/proc", self); !slices.Contains(ns, self) || !slices.Contains(ns, child) {
		t.Errorf("InPIDNamespace(self) = %v, without itself or its child %d", ns, child)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if ns := InPIDNamespace("/proc", child); ns != nil {
		t.Errorf("InPIDNamespace of the reaped child = %v, want nil", ns)
	}
}
