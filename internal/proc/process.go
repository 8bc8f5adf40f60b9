package proc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Pids lists every process ROOT shows (in the PID namespace /proc was mounted for).
func Pids(root string) []int {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Children lists pid's children, zombies included, from ROOT/PID/task/TID/children. A child
// belongs to the thread that forked it (or to any thread of a reaper it was reparented to), so
// every thread's list is read. It reads a few small files where a scan of every process's parent
// reads them all, which matters to whoever polls it while thousands of processes exit (the
// benchmark's reaping round). The kernel needs CONFIG_PROC_CHILDREN, which Debian's and most
// distributions' kernels have.
func Children(root string, pid int) []int {
	dir := filepath.Join(root, strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "children"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, f := range bytes.Fields(data) {
			if n, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// Exe describes the file pid runs (ROOT/PID/exe followed): compare it with os.SameFile to tell
// whether a process has exec'd a given program.
func Exe(root string, pid int) (os.FileInfo, error) {
	return os.Stat(filepath.Join(root, strconv.Itoa(pid), "exe"))
}

// StatusField returns the value of a "Key:\tvalue" line of ROOT/PID/status, spaces trimmed
// ("1234 kB" for VmRSS, "5678\t1" for NSpid).
func StatusField(root string, pid int, key string) (string, error) {
	return StatusFileField(filepath.Join(root, strconv.Itoa(pid), "status"), key)
}

// StatusFileField is StatusField for a status file named by its path: a thread's
// (/proc/thread-self/status, ROOT/PID/task/TID/status).
func StatusFileField(path, key string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	return "", fmt.Errorf("no %s line in %s", key, path)
}

// Command is the process's command name (ROOT/PID/comm, at most 15 bytes), "" when it cannot be
// read.
func Command(root string, pid int) string {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// Catches reports whether pid has a handler for signal sig (1-64), from the SigCgt mask of
// ROOT/PID/status; false once pid is gone or the line cannot be read.
func Catches(root string, pid, sig int) bool {
	v, err := StatusField(root, pid, "SigCgt")
	if err != nil || sig < 1 || sig > 64 {
		return false
	}
	mask, err := strconv.ParseUint(v, 16, 64)
	return err == nil && mask&(1<<(sig-1)) != 0
}
