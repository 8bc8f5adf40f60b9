// Package pod starts a command as PID 1 of a fresh PID namespace, the way a container runtime
// starts a container's init. It is the one launcher of the repository: the integration tests,
// the kubelet scenarios, the rollout harness and the benchmark all make their namespaces here.
// It needs root, and util-linux's unshare but for Direct. The namespace shares the host's
// network and filesystem.
//
// There are three ways to make the namespace (Method), because the callers need different
// things of it:
//
//   - Clone (Start: the kubelet scenarios, the rollout harness): the started process is PID 1
//     itself, so its parent sees its real wait status and its pid is the one to signal.
//   - Fork (the integration package's harness; the benchmark's default): `unshare --pid --fork
//     --mount-proc --kill-child`, the command line a shell would use. The started process is
//     unshare, outside the namespace; PID 1 is its only child (PID1) and unshare passes its status
//     on, imperfectly (ForkStatus). A launcher in front of unshare runs outside the namespace,
//     which a test can use to set what the whole tree inherits (a blocked signal).
//   - Direct (the benchmark's -ns clone): clone(CLONE_NEWPID) and exec, nothing else, so that no
//     unshare is timed; the namespace has no /proc of its own.
package pod

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/proc"
	"github.com/drainit/drainit/signals"
)

// Method is how a command is made PID 1 of a new PID namespace.
type Method int

const (
	// Clone: this process clones the namespace's first process (CLONE_NEWPID|CLONE_NEWNS), in
	// which `unshare --mount-proc --` mounts the namespace's /proc and execs the command.
	Clone Method = iota
	// Fork: `unshare --pid --fork --mount-proc --kill-child COMMAND`; unshare forks the
	// command into the namespace and waits for it, and the command is killed if unshare dies.
	Fork
	// Direct: clone(CLONE_NEWPID) and exec the command, whose argv[0] must be a path. /proc
	// stays the parent namespace's.
	Direct
)

func (m Method) String() string {
	switch m {
	case Clone:
		return "clone"
	case Fork:
		return "fork"
	case Direct:
		return "direct"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Launch is a command line that starts a command as PID 1 of a new PID namespace: exec Argv
// (Argv[0] is a path) with Sys, through os/exec or syscall.ForkExec. Sys is never nil, so that a
// caller can add its own settings.
type Launch struct {
	Argv []string
	Sys  *syscall.SysProcAttr
}

// unshare is util-linux's unshare, looked up once: the benchmark prepares thousands of launches.
var unshare = sync.OnceValues(func() (string, error) {
	p, err := exec.LookPath("unshare")
	if err != nil {
		return "", errors.New("needs unshare (util-linux) to create a PID namespace")
	}
	return p, nil
})

// Prepare returns the Launch that runs argv as PID 1 of a new PID namespace made with method m.
func Prepare(m Method, argv []string) (Launch, error) {
	if len(argv) == 0 {
		return Launch{}, errors.New("pod: empty command")
	}
	if m == Direct {
		return Launch{Argv: argv, Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}}, nil
	}
	bin, err := unshare()
	if err != nil {
		return Launch{}, err
	}
	switch m {
	case Clone:
		// The PID namespace comes from clone(2) itself, so that this process is PID 1's parent
		// and sees its real wait status (unshare --fork reports a SIGKILL death as status 1).
		// Inside, unshare only mounts a /proc of the new namespace and execs the command,
		// staying PID 1.
		return Launch{
			Argv: append([]string{bin, "--mount-proc", "--"}, argv...),
			Sys:  &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS},
		}, nil
	case Fork:
		return Launch{
			Argv: append([]string{bin, "--pid", "--fork", "--mount-proc", "--kill-child"}, argv...),
			Sys:  &syscall.SysProcAttr{},
		}, nil
	}
	return Launch{}, fmt.Errorf("pod: unknown method %v", m)
}

// PID1 returns the host's pid of the namespace's PID 1, given the pid of the process a Launch
// made with m started. With Fork that is unshare's child, which it waits up to timeout to see;
// it returns 0 if exited (closed once the started process has exited; nil for never) closes
// first. With Clone and Direct it is the started process itself (which may not have exec'd the
// command yet: Start waits for that).
func PID1(m Method, started int, exited <-chan struct{}, timeout time.Duration) (int, error) {
	if m != Fork {
		return started, nil
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// unshare forks at once; poll fast at first, then back off so that a wedged one costs
	// little.
	pause := 50 * time.Microsecond
	for {
		if kids := proc.Children("/proc", started); len(kids) > 0 {
			return kids[0], nil
		}
		select {
		case <-exited:
			return 0, nil
		case <-deadline.C:
			return 0, fmt.Errorf("unshare (pid %d) started no child within %s", started, timeout)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Millisecond)
	}
}

// ForkStatus is PID 1's status out of the wait status of the unshare a Fork launch started, and
// what was written to its stderr (PID 1's lines and unshare's, which start "unshare: "). unshare
// exits with PID 1's code. When PID 1 is killed by a signal, unshare (util-linux) re-raises the
// signal on itself; but for SIGKILL, which cannot be re-raised that way, util-linux 2.38 instead
// prints "unshare: sigprocmask unblock failed: Invalid argument" and exits 1. Both are turned
// back into sig. Any other line of unshare's own means unshare failed: err says so, and the
// status is not PID 1's.
func ForkStatus(ws syscall.WaitStatus, stderr []string) (code int, sig syscall.Signal, err error) {
	if ws.Signaled() {
		return 0, ws.Signal(), nil
	}
	for _, l := range stderr {
		if !strings.HasPrefix(l, "unshare: ") {
			continue
		}
		if strings.Contains(l, "sigprocmask unblock failed") && ws.ExitStatus() == 1 {
			return 0, syscall.SIGKILL, nil
		}
		return ws.ExitStatus(), 0, fmt.Errorf("unshare failed (status %d): %s", ws.ExitStatus(), l)
	}
	return ws.ExitStatus(), 0, nil
}

// probe is whether a PID namespace can really be made here (a container or a sandbox may forbid
// it even to root), tried once.
var probe = sync.OnceValue(func() error {
	l, err := Prepare(Fork, []string{"true"})
	if err != nil {
		return err
	}
	out, err := exec.Command(l.Argv[0], l.Argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cannot create a PID namespace here: unshare: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
})

// Available says why PID namespaces cannot be made here, or nil when they can: root, unshare,
// and a kernel and sandbox that allow it.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root to create a PID namespace (unshare --pid)")
	}
	if _, err := unshare(); err != nil {
		return err
	}
	return probe()
}

// Pod is one running PID namespace started by Start.
type Pod struct {
	// PID is the host's pid of the namespace's PID 1 (the command itself, once exec'd).
	PID int
	// Exited is closed once PID 1 has exited and been reaped.
	Exited <-chan struct{}

	cmd    *exec.Cmd
	exited chan struct{}
	state  *os.ProcessState
}

// Options are optional settings of Start.
type Options struct {
	Stdout, Stderr io.Writer // nil: discarded
	Env            []string  // nil: this process's environment
}

// Start runs argv as PID 1 of a new PID namespace (Clone, with its own /proc) and returns once
// argv has been exec'd there, so that PID is the command's (or once PID 1 has exited, for a
// command that is over before its exec could be seen: Wait has its status). When the thread
// that started it dies, the namespace is killed with it (PR_SET_PDEATHSIG).
func Start(argv []string, o Options) (*Pod, error) {
	if len(argv) == 0 {
		return nil, errors.New("pod: empty command")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	want, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	l, err := Prepare(Clone, append([]string{path}, argv[1:]...))
	if err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	cmd := exec.Command(l.Argv[0], l.Argv[1:]...)
	cmd.Stdout, cmd.Stderr, cmd.Env = o.Stdout, o.Stderr, o.Env
	cmd.SysProcAttr = l.Sys
	cmd.SysProcAttr.Setpgid = true // a test's Ctrl-C does not reach PID 1 directly
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pod: start: %w", err)
	}
	p := &Pod{PID: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	p.Exited = p.exited
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	// unshare mounts /proc and then execs the command: wait for the exec, so that a signal sent
	// to PID reaches the command and not unshare's code. The command may exec another in turn
	// (testapp _netns does, at once): what is waited for is that PID no longer runs unshare,
	// which a poll that missed the command's own moment still sees.
	launcher, err := os.Stat(l.Argv[0])
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("pod: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err := proc.Exe("/proc", p.PID); err == nil && (os.SameFile(st, want) || !os.SameFile(st, launcher)) {
			return p, nil
		}
		select {
		case <-p.exited:
			// Gone before the exec was seen: a command that ran and exited at once, or unshare
			// failing. Either way Wait reports the status (unshare's own errors go to Stderr).
			return p, nil
		case <-time.After(200 * time.Microsecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("pod: %s did not start within 10s", argv[0])
		}
	}
}

// Signal sends sig to PID 1 from outside the namespace.
func (p *Pod) Signal(sig syscall.Signal) error { return syscall.Kill(p.PID, sig) }

// Kill ends the whole namespace at once (SIGKILL to PID 1) and waits for it.
func (p *Pod) Kill() {
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	<-p.exited
}

// Wait waits up to d for PID 1 to exit and returns its status the way a shell reports it (the
// code, or 128+N for a signal); ok is false if it was still running after d.
func (p *Pod) Wait(d time.Duration) (status int, ok bool) {
	select {
	case <-p.exited:
	case <-time.After(d):
		return 0, false
	}
	ws, _ := p.state.Sys().(syscall.WaitStatus)
	return signals.ExitCode(unix.WaitStatus(ws)), true
}

// Processes lists the pids (host view) of every process in the pod's PID namespace, PID 1
// included.
func (p *Pod) Processes() []int { return InPIDNamespace("/proc", p.PID) }

// pidNamespace names the PID namespace pid lives in ("pid:[4026532…]"), "" once it is gone.
func pidNamespace(root string, pid int) string {
	ns, _ := os.Readlink(filepath.Join(root, strconv.Itoa(pid), "ns", "pid"))
	return ns
}

// InPIDNamespace lists the processes (as ROOT numbers them) in the PID namespace of pid, pid
// itself included; nil once pid is gone.
func InPIDNamespace(root string, pid int) []int {
	ns := pidNamespace(root, pid)
	if ns == "" {
		return nil
	}
	var out []int
	for _, p := range proc.Pids(root) {
		if pidNamespace(root, p) == ns {
			out = append(out, p)
		}
	}
	return out
}
