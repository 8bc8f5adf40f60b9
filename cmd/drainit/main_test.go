package main

import (
	"os"
	"strings"
	"testing"

	"github.com/drainit/drainit/internal/config"
)

// TestMain runs the tests without the DRAINIT_* variables of the environment they were started
// in, as the integration harness does for the binary: the tests that run drainit in this
// process (runCmd) would read a developer's settings, and, run under a drainit (in a container
// whose init is drainit), its DRAINIT_SUPERVISOR, which names an ancestor of this process, so
// that runCmd would refuse to run (README, "drainit under drainit").
func TestMain(m *testing.M) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, config.EnvPrefix) {
			_ = os.Unsetenv(name)
		}
	}
	os.Exit(m.Run())
}
