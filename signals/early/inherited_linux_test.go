package early

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/drainit/drainit/signals"
)

// The helper process TestKeepable re-executes: it ignores every Keepable signal as drainit does
// (os/signal's Ignore), starts a child as drainit starts the app (os/exec: fork, then exec),
// and prints the child's SigIgn. It gives back this package's own registration first, which
// would otherwise race its Ignores.
func init() {
	if os.Getenv("SIGNALS_TEST_KEEP") == "" {
		return
	}
	Release()
	for sig := syscall.Signal(1); sig <= signals.MaxSignal; sig++ {
		if Keepable(sig) {
			signal.Ignore(sig)
		}
	}
	printChildSigIgn()
}

// printChildSigIgn starts a child as drainit starts the app (os/exec: the Go runtime's fork, then
// exec), prints its SigIgn line and exits: the helper processes' last step.
func printChildSigIgn() {
	out, err := exec.Command("grep", "^SigIgn:", "/proc/self/status").Output()
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	fmt.Print(string(out))
	os.Exit(0)
}

// parseSigIgn reads the mask of a SigIgn line printChildSigIgn printed.
func parseSigIgn(t *testing.T, out string) uint64 {
	t.Helper()
	mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(out, "SigIgn:")), 16, 64)
	if err != nil {
		t.Fatalf("reading %q: %v", out, err)
	}
	return mask
}

// Every signal Keepable names can really be kept ignored for the app: the Go runtime lets
// os/signal set SIG_IGN and leaves it in place across the fork and exec. (PROF, say, would
// not be: the runtime keeps its handler, and resets it to the default in the child.)
func TestKeepable(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SIGNALS_TEST_KEEP=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	mask := parseSigIgn(t, string(out))
	for sig := syscall.Signal(1); sig <= signals.MaxSignal; sig++ {
		if Keepable(sig) && mask&(1<<(sig-1)) == 0 {
			t.Errorf("%s is Keepable, but the child of a process that ignored it has it at its default (SigIgn %016x)", signals.Name(sig), mask)
		}
	}
	for _, sig := range []syscall.Signal{signals.SIGCHLD, signals.SIGURG, signals.SIGCONT, 33} {
		if Keepable(sig) {
			t.Errorf("%s is Keepable: drainit needs it (see Keepable)", signals.Name(sig))
		}
	}
}
