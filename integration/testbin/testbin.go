// Package testbin builds the binaries the integration tests run — drainit, drainit-check beside
// it (which `drainit check` runs) and the test app — once per test process, static
// (CGO_ENABLED=0) as they ship, into a temporary directory.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/drainit/drainit/integration/testenv"
)

// Paths are the built binaries.
type Paths struct {
	Drainit      string
	DrainitCheck string // beside Drainit, where `drainit check` finds it
	TestApp      string
}

var (
	once  sync.Once
	paths Paths
	err   error
)

// Build builds the binaries the first time it is called and returns their paths; later calls
// return the same paths (or the same error). Call Cleanup from TestMain after the tests.
func Build() (Paths, error) {
	once.Do(func() {
		var dir string
		if dir, err = os.MkdirTemp("", "drainit-testbin-"); err != nil {
			return
		}
		paths = Paths{Drainit: filepath.Join(dir, "drainit"), DrainitCheck: filepath.Join(dir, "drainit-check"),
			TestApp: filepath.Join(dir, "testapp")}
		if err = goBuild(paths.Drainit, "./cmd/drainit"); err != nil {
			return
		}
		if err = goBuild(paths.DrainitCheck, "./check/cmd/drainit-check"); err != nil {
			return
		}
		err = goBuild(paths.TestApp, "./integration/testapp")
	})
	return paths, err
}

var (
	plainOnce sync.Once
	plain     string
	plainErr  error
)

// DrainitWithoutEntry builds drainit without its entry point (-tags noentrypoint, as for an
// architecture it is not written for), next to Build's binaries (the first call; later calls return
// the same), for the tests of what drainit does then. Build must have succeeded.
func DrainitWithoutEntry() (string, error) {
	plainOnce.Do(func() {
		if paths.Drainit == "" {
			plainErr = errors.New("testbin: DrainitWithoutEntry before a successful Build")
			return
		}
		plain = filepath.Join(filepath.Dir(paths.Drainit), "drainit-without-entry")
		plainErr = goBuild(plain, "./cmd/drainit", "-tags=noentrypoint")
	})
	return plain, plainErr
}

// CopyInto puts Build's binaries into dir as drainit, drainit-check and testapp, for a container
// image's build context (which must hold what the image copies).
func CopyInto(dir string) error {
	bins, err := Build()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, src := range map[string]string{"drainit": bins.Drainit, "drainit-check": bins.DrainitCheck, "testapp": bins.TestApp} {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			return fmt.Errorf("copying %s into %s: %w", name, dir, err)
		}
	}
	return nil
}

// goBuild builds pkg (relative to the module's root) into out, static and stripped.
func goBuild(out, pkg string, flags ...string) error {
	cmd := exec.Command("go", append(append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}, flags...), pkg)...)
	cmd.Dir = testenv.ModuleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// Cleanup removes what Build made.
func Cleanup() {
	if paths.Drainit != "" {
		_ = os.RemoveAll(filepath.Dir(paths.Drainit))
	}
}
