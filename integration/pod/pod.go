// Package pod starts a command as PID 1 of a fresh PID namespace, the way a container runtime
// starts a container's init, for the integration tests and the rollout harness. It needs root and
// util-linux's unshare. The namespace shares the host's network and filesystem.
package pod

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/signals"
)

// Pod is one running PID namespace.
type Pod struct {
	// PID is the host's pid of the namespace's PID 1 (the command itself, once exec'd).
	PID int
	// Exited is closed once PID 1 has exited and unshare has reported it.
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

// Available says why pods cannot be started here, or nil when they can.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (unshare --pid)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return errors.New("needs unshare (util-linux)")
	}
	return nil
}

// Start runs argv as PID 1 of a new PID namespace (with its own /proc) and returns once argv has
// been exec'd there, so that PID is the command's (or once PID 1 has exited, for a command that
// is over before its exec could be seen: Wait has its status). When the thread that started it dies, the
// namespace is killed with it (PR_SET_PDEATHSIG).
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
	// The PID namespace comes from clone(2) itself, so that this process is PID 1's parent and
	// sees its real wait status (unshare --fork reports a signal death as status 1). Inside,
	// unshare only mounts a /proc of the new namespace and execs the command, staying PID 1.
	args := append([]string{"--mount-proc", "--", path}, argv[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = o.Stdout, o.Stderr, o.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		Setpgid:    true, // a test's Ctrl-C does not reach PID 1 directly
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pod: start: %w", err)
	}
	p := &Pod{cmd: cmd, exited: make(chan struct{})}
	p.Exited = p.exited
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	want, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	// unshare mounts /proc and then execs the command: wait for the exec, so that a signal sent
	// to PID reaches the command and not unshare's code.
	p.PID = cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err := os.Stat("/proc/" + strconv.Itoa(p.PID) + "/exe"); err == nil && os.SameFile(st, want) {
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
// included, by comparing /proc/*/ns/pid.
func (p *Pod) Processes() []int {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/ns/pid")
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns {
			out = append(out, pid)
		}
	}
	return out
}

// State returns the one-letter state of a process (R, S, D, T, Z, …) from /proc/PID/stat, or ""
// when it is gone.
func State(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return strings.TrimSpace(string(b[i+2 : i+3]))
}
