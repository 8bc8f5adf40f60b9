package main

import (
	"os"
	"os/exec"
)

// runCheck runs drainit-check as a child, with drainit's standard streams, and waits for it:
// Windows has no exec. Its exit status comes back as an *exec.ExitError.
func runCheck(path string, args []string) error {
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}
