// Package testbin builds the binaries the integration tests run — drainit and the test app —
// once per test process, static (CGO_ENABLED=0) as they ship, into a temporary directory.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// Paths are the built binaries.
type Paths struct {
	Drainit string
	TestApp string
}

var (
	once  sync.Once
	paths Paths
	err   error
)

// Build builds both binaries the first time it is called and returns their paths; later calls
// return the same paths (or the same error). Call Cleanup from TestMain after the tests.
func Build() (Paths, error) {
	once.Do(func() {
		var dir string
		if dir, err = os.MkdirTemp("", "drainit-testbin-"); err != nil {
			return
		}
		root := moduleRoot()
		paths = Paths{Drainit: filepath.Join(dir, "drainit"), TestApp: filepath.Join(dir, "testapp")}
		for out, pkg := range map[string]string{paths.Drainit: "./cmd/drainit", paths.TestApp: "./integration/testapp"} {
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if b, e := cmd.CombinedOutput(); e != nil {
				err = fmt.Errorf("go build %s: %v\n%s", pkg, e, b)
				return
			}
		}
	})
	return paths, err
}

// Cleanup removes what Build made.
func Cleanup() {
	if paths.Drainit != "" {
		_ = os.RemoveAll(filepath.Dir(paths.Drainit))
	}
}

// moduleRoot is the repository's root, found from this file's location.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
