package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/execerr"
	"github.com/drainit/drainit/internal/proc"
	"github.com/drainit/drainit/internal/startsig"
	"github.com/drainit/drainit/signals"
)

// hookProcess is one running exec hook: its process, which leads its own process group, and the
// goroutines reading its output.
type hookProcess struct {
	pid     int
	pidfd   int                    // the leader's, from the fork; -1 if the kernel gave none
	exit    <-chan unix.WaitStatus // nil once the status has been received
	ws      unix.WaitStatus
	outDone <-chan struct{} // readers, until await has seen it closed; then nil
	readers chan struct{}   // closed when both readers have returned: at EOF, or once out is closed
	out     [2]*os.File     // the read ends
}

// Run starts the command in its own process group, logs its output to zerolog.Ctx(ctx), and
// returns nil when it exits with status 0, an error naming the status otherwise. When ctx ends
// first, the group is stopped (SIGTERM, then SIGKILL after termGrace) and the error wraps ctx's
// cause. Run never waits for the process itself: the status comes through the Children given to
// NewExec. No output line is logged after Run returns.
func (h *execHook) Run(ctx context.Context) error {
	if h.children == nil {
		return fmt.Errorf("exec hook %q: not started: no Children to learn its exit from", h.name)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("exec hook %q: not started: %w", h.name, context.Cause(ctx))
	}
	log := zerolog.Ctx(ctx)
	start := time.Now()
	p, err := h.start(ctx, log)
	if err != nil {
		return fmt.Errorf("exec hook %q: cannot start: %w", h.name, err)
	}
	defer p.release()
	log.Debug().Str("hook", h.name).Int("pid", p.pid).Strs("command", h.argv).Msg("hook started")
	if !p.await(false, nil, ctx.Done()) {
		p.poll()
		if p.exit != nil || p.outDone != nil {
			return h.stop(p, ended(ctx, time.Since(start)), errors.Is(context.Cause(ctx), ErrLastDeadline))
		}
		// It ended just as ctx did: report what it did.
	}
	if !p.await(true, time.After(outputWait), ctx.Done()) {
		log.Warn().Str("hook", h.name).Int("pgid", p.pid).
			Msg("the hook exited but left processes holding its output; their output is no longer read")
	}
	p.closeOutput()
	return h.status(p.ws)
}

// CheckProgram finds an exec hook's program as Run will (a name without a slash in PATH) and
// checks that it is a file drainit may execute, so that drainit can refuse to start on a missing
// one rather than meet it at the stop, where the hook fails and its deregistration never
// happens. Any other hook has no program: nil. An exec can still fail later (a #! line naming a
// missing interpreter, a program removed meanwhile); Run reports that.
func CheckProgram(h Hook) error {
	e, ok := h.(*execHook)
	if !ok {
		return nil
	}
	_, err := exec.LookPath(e.argv[0])
	return err
}

// start resolves the command and starts it with an empty stdin, piped stdout and stderr, and no
// signal blocked (startsig.StartUnblocked).
func (h *execHook) start(ctx context.Context, log *zerolog.Logger) (*hookProcess, error) {
	// exec.LookPath only searches PATH, the way a shell does; nothing of os/exec runs the process.
	path, err := exec.LookPath(h.argv[0])
	if err != nil {
		return nil, err
	}
	if err := openWithin(ctx, path); err != nil {
		return nil, err
	}
	var in [2]int
	if err := unix.Pipe2(in[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	_ = unix.Close(in[1]) // reading stdin gives EOF: a hook cannot wait on input
	defer unix.Close(in[0])
	var r, w [2]*os.File
	for i := range r {
		if r[i], w[i], err = os.Pipe(); err != nil {
			closeAll(r[:i]...)
			closeAll(w[:i]...)
			return nil, fmt.Errorf("output pipe: %w", err)
		}
	}
	// Fd puts the write ends back in blocking mode, which the hook's stdout expects.
	files := []uintptr{uintptr(in[0]), w[0].Fd(), w[1].Fd()}
	pidfd := -1
	pid, exit, err := h.children.start(func() (int, error) {
		return startsig.StartUnblocked(func() (int, error) {
			return syscall.ForkExec(path, h.argv, &syscall.ProcAttr{
				Env:   os.Environ(),
				Files: files,
				Sys:   &syscall.SysProcAttr{Setpgid: true, PidFD: &pidfd},
			})
		})
	})
	closeAll(w[:]...) // the hook's copies are the only write ends left: EOF once its group is gone
	if err != nil {
		closeAll(r[:]...)
		_, err := execerr.Explain(path, err)
		return nil, err
	}
	p := &hookProcess{pid: pid, pidfd: pidfd, exit: exit, readers: make(chan struct{}), out: r}
	p.outDone = p.readers
	go func() {
		logOutput(log, h.name, r[0], r[1], realClock)
		close(p.readers)
	}()
	return p, nil
}

// openWithin opens the hook's program once before the fork, in a goroutine that gives up its P
// while it waits, and returns ctx's cause if the open has not returned by ctx's end: an open
// that hangs (a program on a stuck network or CSI volume, a file lease held) then fails the
// hook. The fork could not be given up: Go forks with vfork, the forking thread keeps its P
// until the child's exec has opened the program, and drainit runs on one P, so an exec that hung
// there froze all of drainit (no signal handled, no SIGKILL, no exit). The open's own error is
// left to the exec to report (a program may be executable and not readable).
func openWithin(ctx context.Context, path string) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0); err == nil {
			_ = unix.Close(fd)
		}
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("opening %s did not finish: %w", path, context.Cause(ctx))
	}
}

// stop ends the hook's process group after its context ended: SIGTERM, SIGKILL after
// termGrace unless everything is gone (the hook's process, whatever holds its output, every
// member of its group), and a bounded wait for the exit status. At the last deadline
// (ErrLastDeadline) it is SIGKILL at once and a shorter wait.
func (h *execHook) stop(p *hookProcess, why error, last bool) error {
	g := p.group()
	how, wait := "SIGKILL", lastKillWait
	if !last {
		g.signal(unix.SIGTERM)
		how, wait = "SIGTERM", killWait
	}
	if last || !p.stopped(g, time.Now().Add(termGrace)) {
		g.signal(unix.SIGKILL)
		if !last {
			how = "SIGTERM, then SIGKILL"
		}
		if !p.stopped(g, time.Now().Add(wait)) && p.exit != nil {
			h.children.forget(p.pid)
			how += " (its exit was never reported)"
		}
	}
	p.closeOutput()
	return fmt.Errorf("exec hook %q: %w; its process group got %s", h.name, why, how)
}

// group is the hook's process group as stop may signal it: never by its number alone. Once the
// leader is reaped and the group's last member gone, the number is free, and a process that took
// the leader's pid may lead a group of that number (seen: the SIGKILL a second after the SIGTERM
// that ended the leader ended such a stranger). So the group is named by the leader's pidfd,
// whose struct pid a later process given the same number never shares; before Linux 6.9 (no
// PIDFD_SIGNAL_PROCESS_GROUP), by its number only while the leader is unreaped, which keeps the
// number taken, and after that by the members seen while it was.
type group struct {
	p     *hookProcess
	byFD  bool     // the kernel signals the group through the leader's pidfd
	known []member // without byFD: the members seen while the number was the hook's
}

// member is a process of the hook's group, told from a later one with its pid by its start time.
type member struct {
	pid   int
	start uint64
}

func (p *hookProcess) group() group {
	g := group{p: p}
	if p.pidfd >= 0 && unix.PidfdSendSignal(p.pidfd, 0, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP) != unix.EINVAL {
		g.byFD = true
		return g
	}
	for _, pid := range proc.Pids("/proc") {
		// Not the leader: once it is reaped, a process with its pid is a stranger.
		if m, ok := groupMember(pid, p.pid); ok && pid != p.pid {
			g.known = append(g.known, m)
		}
	}
	if !p.unreaped() {
		g.known = nil // the scan may have found a stranger's group
	}
	return g
}

// groupMember reads whether pid is a member of group pgid that can still run, and its start time.
func groupMember(pid, pgid int) (member, bool) {
	b, err := proc.StatLine("/proc", pid)
	if err != nil {
		return member{}, false
	}
	st, err := proc.ParseStat(b)
	if err != nil || st.PGID != pgid || st.Gone() {
		return member{}, false
	}
	start, err := proc.ParseStartTime(b)
	return member{pid, start}, err == nil
}

// unreaped reports whether the leader has not been reaped yet (it may be a zombie). Without a
// pidfd a status the reaper has collected but not yet handed over is not seen: a short window
// left open on kernels before 5.3.
func (p *hookProcess) unreaped() bool {
	if p.pidfd >= 0 {
		return unix.PidfdSendSignal(p.pidfd, 0, nil, 0) == nil
	}
	return p.exit != nil && len(p.exit) == 0
}

// signal sends sig (0: none, a probe) to the group and reports whether any member got it.
func (g group) signal(sig unix.Signal) bool {
	if g.byFD {
		return unix.PidfdSendSignal(g.p.pidfd, sig, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP) == nil
	}
	if g.p.unreaped() {
		return unix.Kill(-g.p.pid, sig) == nil
	}
	got := false
	for _, m := range g.known {
		if now, ok := groupMember(m.pid, g.p.pid); ok && now == m {
			got = unix.Kill(m.pid, sig) == nil || got
		}
	}
	return got
}

// stopped waits until the process has exited, its output is closed and its group has no member
// left that can run, or until deadline, and reports whether all that happened.
func (p *hookProcess) stopped(g group, deadline time.Time) bool {
	return p.await(true, time.After(time.Until(deadline)), nil) && groupGone(g, time.After(time.Until(deadline)))
}

// groupGone waits until the group has no member left that can still run, or until timeout
// fires, and reports whether it emptied. A member that ignores SIGTERM need not hold the
// hook's output, so neither the leader's exit nor the end of the output says it is gone, and the
// kernel tells of no such event: hence the polling.
func groupGone(g group, timeout <-chan time.Time) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !groupEmpty(g) {
		select {
		case <-tick.C:
		case <-timeout:
			return false
		}
	}
	return true
}

// groupEmpty reports whether the group has no member that can still run. A zombie counts as
// gone: an orphan of the hook is reaped at once only where drainit is its subreaper, and by the
// system's init, in its own time, elsewhere. Signal 0 answers at no cost once the group is
// empty; only while it finds members is /proc read, by the number, which those members keep
// the hook's.
func groupEmpty(g group) bool {
	if !g.signal(0) {
		return true
	}
	for _, pid := range proc.Pids("/proc") {
		if _, ok := groupMember(pid, g.p.pid); ok {
			return false
		}
	}
	return true
}

// status turns the hook's wait status into Run's result.
func (h *execHook) status(ws unix.WaitStatus) error {
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return nil
	case ws.Signaled():
		return fmt.Errorf("exec hook %q: killed by %s", h.name, signals.Name(ws.Signal()))
	default:
		return fmt.Errorf("exec hook %q: exited with status %d", h.name, ws.ExitStatus())
	}
}

// await waits until the process has exited (and, with output, until its output is closed as
// well), until timeout fires or until stop is closed; nil channels never fire. It reports whether
// what it waited for happened.
func (p *hookProcess) await(output bool, timeout <-chan time.Time, stop <-chan struct{}) bool {
	for p.exit != nil || (output && p.outDone != nil) {
		select {
		case ws := <-p.exit:
			p.ws, p.exit = ws, nil
		case <-p.outDone:
			p.outDone = nil
		case <-timeout:
			return false
		case <-stop:
			return false
		}
	}
	return true
}

// poll takes in, without blocking, whatever await could have seen.
func (p *hookProcess) poll() {
	select {
	case ws := <-p.exit:
		p.ws, p.exit = ws, nil
	default:
	}
	select {
	case <-p.outDone:
		p.outDone = nil
	default:
	}
}

// closeOutput stops reading the output, if anything still holds it open, and returns once the
// readers have logged their last line.
func (p *hookProcess) closeOutput() {
	closeAll(p.out[:]...)
	<-p.readers
}

// release closes the leader's pidfd, once nothing signals the group any more.
func (p *hookProcess) release() {
	if p.pidfd >= 0 {
		_ = unix.Close(p.pidfd)
		p.pidfd = -1
	}
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close() // a second close of a read end is harmless
	}
}
