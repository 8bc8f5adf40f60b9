package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
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
		t.Skipf("no FIFO here: %v", err)
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

// TestTerminationLogCut: a summary longer than the kubelet reads is cut to 4096 bytes, never
// inside a character.
func TestTerminationLogCut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", terminationLogMax-1) + "é and more"
	writeTerminationLog(p, long)
	b, err := os.ReadFile(p)
	if err != nil || string(b) != strings.Repeat("a", terminationLogMax-1) || !utf8.Valid(b) {
		t.Errorf("termination log of %d bytes (valid UTF-8: %v, %v); want the 4095 bytes before the é", len(b), utf8.Valid(b), err)
	}
	for _, s := range []string{"", "abc", strings.Repeat("é", 3000), strings.Repeat("€", 2000)} {
		got := truncateUTF8(s, terminationLogMax)
		if len(got) > terminationLogMax || !utf8.ValidString(got) || !strings.HasPrefix(s, got) || len(s)-len(got) >= 4 && len(got) < terminationLogMax-3 {
			t.Errorf("truncateUTF8 of %d bytes gave %d bytes (valid %v)", len(s), len(got), utf8.ValidString(got))
		}
	}
}
