//go:build linux && amd64

package startsig

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"
)

// The entry point pins the start to the CPU getcpu names, and this machine's CPUs are few: the
// byte and bit it computes for a high CPU (past a 32-bit word, past a 64-bit word, where s390x's
// big-endian words move the byte) run nowhere else. Here the probe runs traced: getcpu answers a
// CPU the test chooses, and the mask the entry point then hands to sched_setaffinity is read at
// the system call, where the kernel would read it. Under qemu-user the traced calls are qemu's
// own for its guest, the mask converted to the host's layout, as the kernel takes it; a wrong
// byte in the guest's layout is a wrong CPU here too. (The CPU does not exist, so the call fails
// and nothing is pinned; the probe runs on.) A CPU past the 4096 of the mask pins nothing.
func TestPinMaskForHighCPUs(t *testing.T) {
	eachArch(t, func(t *testing.T, arch string, runner []string, probe string) {
		build(t, arch, probe, true)
		for _, cpu := range []uint32{9, 37, 70, 1000, 4095, 4096} {
			mask, err := tracePin(append(runner, probe), cpu)
			if errors.Is(err, unix.EPERM) {
				testenv.SkipUnlessCI(t, "ptrace is not allowed here (kernel.yama.ptrace_scope, a seccomp profile): "+err.Error())
			}
			if err != nil {
				t.Fatalf("CPU %d: %v", cpu, err)
			}
			if cpu >= 4096 {
				if mask != nil {
					t.Errorf("getcpu answered CPU %d, past the mask: the entry point asked for CPUs %v, want no pin", cpu, setBits(mask))
				}
				continue
			}
			if got := setBits(mask); len(got) != 1 || got[0] != int(cpu) {
				t.Errorf("getcpu answered CPU %d: the entry point asked sched_setaffinity for CPUs %v, want [%d]", cpu, got, cpu)
			}
		}
	})
}

// setBits lists the CPUs a sched_setaffinity mask (the kernel's layout on this little-endian
// machine: bit i of byte b is CPU 8b+i) holds.
func setBits(mask []byte) []int {
	var cpus []int
	for b, v := range mask {
		for v != 0 {
			i := bits.TrailingZeros8(v)
			cpus = append(cpus, 8*b+i)
			v &^= 1 << i
		}
	}
	return cpus
}

// tracePin runs argv traced, answers every getcpu with cpu, and returns the mask of the first
// sched_setaffinity call, nil when there was none; the process is let go then, or runs to its
// end.
func tracePin(argv []string, cpu uint32) ([]byte, error) {
	// ptrace answers only the thread that is the tracer: the one that started the process.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "STARTSIG_PIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s traced: %w", argv[0], err)
	}
	pid := cmd.Process.Pid
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		return nil, fmt.Errorf("waiting for the traced exec: %v, status %v", err, ws)
	}
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_TRACESYSGOOD|unix.PTRACE_O_EXITKILL); err != nil {
		return nil, fmt.Errorf("PTRACE_SETOPTIONS: %w", err)
	}
	// ended is the probe's end, which must be a clean one.
	ended := func() ([]byte, error) {
		if ws.ExitStatus() != 0 || ws.Signaled() {
			return nil, fmt.Errorf("the probe ended: %v", ws)
		}
		return nil, nil
	}
	// gone collects the end of a probe that left its stop unasked: the process runs threads
	// (only the first is traced), and one of them ended it (exit_group) while the traced one
	// stood at a system call.
	gone := func(what string, err error) ([]byte, error) {
		if !errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			return nil, err
		}
		if !ws.Exited() && !ws.Signaled() {
			return nil, fmt.Errorf("%s: the probe is gone, then %v", what, ws)
		}
		return ended()
	}
	entering := true
	sig := 0
	for range 200000 {
		if err := unix.PtraceSyscall(pid, sig); err != nil {
			return gone("PTRACE_SYSCALL", err)
		}
		sig = 0
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			return nil, err
		}
		switch {
		case ws.Exited() || ws.Signaled():
			return ended()
		case !ws.Stopped():
			continue
		case ws.StopSignal() != syscall.SIGTRAP|0x80:
			sig = int(ws.StopSignal()) // a signal for the process: passed on
			continue
		}
		var regs unix.PtraceRegs
		if err := unix.PtraceGetRegs(pid, &regs); err != nil {
			return gone("PTRACE_GETREGS", err)
		}
		nr := regs.Orig_rax
		switch {
		case !entering && nr == unix.SYS_GETCPU && int64(regs.Rax) == 0 && regs.Rdi != 0:
			var b [4]byte
			b[0], b[1], b[2], b[3] = byte(cpu), byte(cpu>>8), byte(cpu>>16), byte(cpu>>24)
			if _, err := unix.PtracePokeData(pid, uintptr(regs.Rdi), b[:]); err != nil {
				return nil, fmt.Errorf("writing getcpu's answer: %w", err)
			}
		case entering && nr == unix.SYS_SCHED_SETAFFINITY:
			mask := make([]byte, regs.Rsi)
			if _, err := unix.PtracePeekData(pid, uintptr(regs.Rdx), mask); err != nil {
				return nil, fmt.Errorf("reading sched_setaffinity's mask: %w", err)
			}
			return mask, nil
		}
		entering = !entering
	}
	return nil, fmt.Errorf("no end after 200000 stops")
}
