package spare

import (
	"os"
	"runtime"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// threads is how many threads this process has.
func threads(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		testenv.SkipUnlessCI(t, "no /proc/self/task: "+err.Error())
	}
	return len(tasks)
}

// Reserve(n) leaves at least n threads besides the runtime's monitor, and a garbage collection and
// another Reserve later end none of them: the runtime keeps idle threads, and takes them before
// it creates new ones.
func TestReserveStartsThreadsThatStay(t *testing.T) {
	n := threads(t) + 4
	Reserve(n)
	after := threads(t)
	if after < n+1 {
		t.Fatalf("%d threads after Reserve(%d), want at least %d", after, n, n+1)
	}
	runtime.GC()
	Reserve(n)
	if again := threads(t); again < after {
		t.Errorf("%d threads after a GC and another Reserve(%d), fewer than the %d there were", again, n, after)
	}
}
