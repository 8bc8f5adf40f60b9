package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/drainit/drainit/internal/proc"
)

// affinity prints the CPUs this process may run on and the distinct sets of its parent's
// threads: the app's view of what its init left it, and of the init's own threads.
func affinity() error {
	app, err := cpusAllowed("/proc/self/status")
	if err != nil {
		return err
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", os.Getppid()))
	if err != nil || len(tasks) == 0 {
		return fmt.Errorf("the parent's threads: %v (%d found)", err, len(tasks))
	}
	var parent []string
	for _, t := range tasks {
		l, err := cpusAllowed(t)
		if err != nil {
			return err
		}
		if !slices.Contains(parent, l) {
			parent = append(parent, l)
		}
	}
	slices.Sort(parent)
	say("affinity app=%s parent=%s", app, strings.Join(parent, ","))
	return nil
}

// cpusAllowed reads the Cpus_allowed_list of a /proc status file.
func cpusAllowed(status string) (string, error) {
	return proc.StatusFileField(status, "Cpus_allowed_list")
}
