package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// checkBinary is the program `drainit check` runs. The manifest check is a binary and a module
// of its own (check/), so that drainit, which starts every container it runs in, does not link
// the YAML parser and what it brings: see check/cmd/drainit-check.
const checkBinary = "drainit-check"

// checkCmd is `drainit check`: drainit-check, found beside drainit or else in PATH, run with the
// same arguments, standard streams and environment; on Unix drainit becomes it (exec). It
// returns the exit status, 2 when there is none to run.
func checkCmd(args []string, stderr io.Writer) int {
	path, err := findCheck()
	if err == nil {
		err = runCheck(path, args)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "drainit check: %v\n", err)
		return 2
	}
	return 0
}

// findCheck is drainit-check's path: in drainit's own directory (as the release archives,
// packages and image install them), else in PATH.
func findCheck() (string, error) {
	name := checkBinary
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	where := "drainit's directory"
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		where = dir
		beside := filepath.Join(dir, name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
			return beside, nil
		}
	}
	path, err := exec.LookPath(checkBinary)
	if err == nil {
		return path, nil
	}
	// A PATH entry of "." (exec.ErrDot) is not followed: drainit runs no program from the
	// working directory it was not asked to.
	return "", fmt.Errorf("%s is in neither %s nor PATH: the manifest check is a binary of its own, "+
		"in drainit's release archives, packages and image beside drainit (or, in a clone of github.com/drainit/drainit: go install ./check/cmd/drainit-check)",
		checkBinary, where)
}
