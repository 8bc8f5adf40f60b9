package supervisor

import (
	"os"
	"path/filepath"
	"testing"
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
