package signals

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The helper process the test re-executes: it sends itself signals 32 and 34, with or without
// IgnoreUncatchable first, and says whether it survived.
func init() {
	mode := os.Getenv("SIGNALS_TEST_HELPER")
	if mode == "" {
		return
	}
	if mode == "ignore" {
		if err := IgnoreUncatchable(); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
	}
	// A fatal signal at its default action ends the whole process as it is sent (the kernel
	// turns it into a group exit at once); an ignored one is discarded as it is sent.
	for _, sig := range []syscall.Signal{32, 34} {
		_ = syscall.Kill(os.Getpid(), sig)
	}
	fmt.Println("alive")
	os.Exit(0)
}

// TestIgnoreUncatchable: signals 32 and 34, which Go programs cannot catch, end one at their
// default action; after IgnoreUncatchable they do nothing.
func TestIgnoreUncatchable(t *testing.T) {
	for _, c := range []struct {
		mode  string
		alive bool
	}{{"default", false}, {"ignore", true}} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SIGNALS_TEST_HELPER="+c.mode)
		out, err := cmd.Output()
		alive := err == nil && strings.TrimSpace(string(out)) == "alive"
		if alive != c.alive {
			t.Errorf("%s: alive=%v (%v, %q), want %v", c.mode, alive, err, out, c.alive)
		}
	}
}
