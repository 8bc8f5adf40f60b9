package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/startsig"
)

// TestMain runs the tests without the DRAINIT_* variables of the environment they were started
// in, as the integration harness does for the binary: the tests that run drainit in this
// process (runCmd) would read a developer's settings, and, run under a drainit (in a container
// whose init is drainit), its DRAINIT_SUPERVISOR, which names an ancestor of this process, so
// that runCmd would refuse to run (README, "drainit under drainit").
//
// This test binary starts at drainit's entry point too (main.go imports internal/startsig/entry),
// which holds the start on one CPU until drainit starts its app: the tests, and the builds and
// processes they start, run on every CPU given instead.
func TestMain(m *testing.M) {
	if err := startsig.Unpin(); err != nil {
		fmt.Fprintln(os.Stderr, "giving the test binary its CPUs back:", err)
		os.Exit(1)
	}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, config.EnvPrefix) {
			_ = os.Unsetenv(name)
		}
	}
	os.Exit(m.Run())
}
