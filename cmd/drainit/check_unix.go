//go:build !windows

package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// runCheck replaces drainit with drainit-check: its exit status and its signals are then the
// caller's own, with no process between them. It returns only if exec fails.
func runCheck(path string, args []string) error {
	if err := unix.Exec(path, append([]string{path}, args...), os.Environ()); err != nil {
		return fmt.Errorf("running %s: %w", path, err)
	}
	return nil
}
