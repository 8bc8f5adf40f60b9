package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"
)

// TestTerminationLog: the summary goes to --termination-log when that file exists and is
// writable (the kubelet bind-mounts it), replacing what was there; drainit never creates it
// (README, the options table).
func TestTerminationLog(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(existing, []byte("an earlier, longer run's summary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTerminationLog(existing, "exit 0 +1ms")
	if b, err := os.ReadFile(existing); err != nil || string(b) != "exit 0 +1ms" {
		t.Errorf("termination log %q, %v; want the summary alone", b, err)
	}

	missing := filepath.Join(dir, "missing")
	writeTerminationLog(missing, "exit 0 +1ms")
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("drainit created the termination log %s (stat: %v)", missing, err)
	}
}

// TestTerminationLogNeverWaits: a termination log that is a FIFO no one reads (a mistaken
// path, /dev/stdout whose reader has gone) must not hold drainit's exit: opening one for writing
// waits for a reader, until the runtime's SIGKILL. Before, it did.
func TestTerminationLogNeverWaits(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		testenv.SkipUnlessCI(t, "no FIFO here: "+err.Error())
	}
	done := make(chan struct{})
	go func() { writeTerminationLog(fifo, "exit 0 +1ms"); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// Let the stuck open go, so that the test binary can end.
		if f, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			defer f.Close()
		}
		t.Fatal("writing the summary to a FIFO with no reader did not return in 10 s")
	}
}

// TestTerminationLogCut: a summary longer than the kubelet reads (4096 bytes) keeps its start and
// its end, the exit status, with its middle left out, never inside a character.
func TestTerminationLogCut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := "trigger SIGTERM +0s; " + strings.Repeat("hook é ", 1000) + "exit 143 +9.5s"
	writeTerminationLog(p, long)
	b, err := os.ReadFile(p)
	if err != nil || len(b) > terminationLogMax || !utf8.Valid(b) ||
		!strings.HasPrefix(string(b), "trigger SIGTERM +0s; hook") || !strings.HasSuffix(string(b), "hook é exit 143 +9.5s") || !strings.Contains(string(b), elision) {
		t.Errorf("termination log of %d bytes (valid UTF-8: %v, %v): want at most %d bytes with the start, the exit and %q between:\n%s",
			len(b), utf8.Valid(b), err, terminationLogMax, elision, b)
	}
	for _, s := range []string{"", "abc", strings.Repeat("é", 3000), strings.Repeat("€", 2000), strings.Repeat("a", 5000) + "€"} {
		got := cutMiddle(s, terminationLogMax)
		if len(got) > terminationLogMax || !utf8.ValidString(got) || len(s) <= terminationLogMax && got != s ||
			len(s) > terminationLogMax && len(got) < terminationLogMax-8 {
			t.Errorf("cutMiddle of %d bytes gave %d bytes (valid %v)", len(s), len(got), utf8.ValidString(got))
		}
	}
}
