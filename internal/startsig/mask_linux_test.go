package startsig

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/signals"
)

// Blocked reads the calling thread's mask as the kernel holds it: blocked with a raw
// rt_sigprocmask (the kernel's layout, one 64-bit mask), a standard signal, a real-time one and
// the last one are listed. A child started with StartUnblocked from that thread has none of them
// blocked, and the thread has its mask back after.
func TestBlockedAndStartUnblocked(t *testing.T) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		testenv.SkipUnlessCI(t, "no grep to read a child's mask: "+err.Error())
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	blocked := []unix.Signal{unix.SIGUSR1, 40, signals.MaxSignal}
	var set, old uint64
	for _, s := range blocked {
		set |= 1 << (s - 1)
	}
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, uintptr(unsafe.Pointer(&set)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); errno != 0 {
		t.Fatal(errno)
	}
	defer unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	if got := Blocked(); !containsAll(got, blocked) {
		t.Errorf("Blocked() = %v, want %v among them", got, blocked)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pid, err := StartUnblocked(func() (int, error) {
		return syscall.ForkExec(grep, []string{"grep", "^SigBlk:", "/proc/self/status"},
			&syscall.ProcAttr{Files: []uintptr{0, w.Fd(), 2}})
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 256)
	n, _ := r.Read(out)
	if line := strings.TrimSpace(string(out[:n])); line != "SigBlk:\t0000000000000000" {
		t.Errorf("a child started with StartUnblocked: %q, want no signal blocked", line)
	}
	if got := Blocked(); !containsAll(got, blocked) {
		t.Errorf("after StartUnblocked the thread has %v blocked, want its mask back (%v among them)", got, blocked)
	}
}

func containsAll(have, want []unix.Signal) bool {
	for _, s := range want {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}
