//go:build linux

package main

import (
	"os"
	"runtime"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// threadCount is how many threads this process has.
func threadCount(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		testenv.SkipUnlessCI(t, "no /proc/self/task: "+err.Error())
	}
	return len(tasks)
}

// startSpareThreads(n) leaves at least n threads besides the runtime's monitor, and a garbage
// collection and another call later end none of them: the runtime keeps idle threads, and takes
// them before it creates new ones.
func TestSpareThreadsStay(t *testing.T) {
	n := threadCount(t) + 4
	startSpareThreads(n)
	after := threadCount(t)
	if after < n+1 {
		t.Fatalf("%d threads after startSpareThreads(%d), want at least %d", after, n, n+1)
	}
	runtime.GC()
	startSpareThreads(n)
	if again := threadCount(t); again < after {
		t.Errorf("%d threads after a GC and another startSpareThreads(%d), fewer than the %d there were", again, n, after)
	}
}
