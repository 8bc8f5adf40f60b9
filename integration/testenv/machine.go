// The machine and its processes as the harnesses and the benchmark read them from /proc: what
// drainit itself reads lives in internal/proc.

package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LoadAverage is the 1-minute load average as ROOT/loadavg writes it ("0.42").
func LoadAverage(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "loadavg"))
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "", errors.New("loadavg: empty")
	}
	return f[0], nil
}

// CPUModel is the first "model name" of ROOT/cpuinfo (x86; other architectures name it
// differently and get an error).
func CPUModel(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "cpuinfo"))
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("cpuinfo: no model name")
}

// SockstatTCP reads the "TCP:" line of ROOT/net/sockstat, the counters of the reader's network
// namespace: "TCP: inuse N orphan N tw N alloc N mem N" gives {"inuse": N, "orphan": N, …}.
func SockstatTCP(root string) (map[string]int, error) {
	data, err := os.ReadFile(filepath.Join(root, "net", "sockstat"))
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "TCP:" {
			continue
		}
		out := map[string]int{}
		for i := 1; i+1 < len(f); i += 2 {
			v, err := strconv.Atoi(f[i+1])
			if err != nil {
				return nil, fmt.Errorf("sockstat: TCP %s %q: %w", f[i], f[i+1], err)
			}
			out[f[i]] = v
		}
		return out, nil
	}
	return nil, errors.New("sockstat: no TCP line")
}

// MountPoints lists the mount points of pid's mount namespace (field 5 of each
// /proc/PID/mountinfo line, with the kernel's octal escapes for spaces and the like left as
// they are) that are dir or below it.
func MountPoints(root string, pid int, dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out, nil
}

// ProcessExists reports whether pid is in ROOT's process table: running, stopped, or a zombie not yet
// reaped. Only "no such file" says it is gone; any other error (a /proc that hides it) does not.
func ProcessExists(root string, pid int) bool {
	_, err := os.Stat(filepath.Join(root, strconv.Itoa(pid)))
	return !errors.Is(err, os.ErrNotExist)
}

// CPUTime is the time all of pid's threads have spent on a CPU, from each thread's schedstat
// (nanoseconds, finer than stat's clock ticks); 0 once the process is gone.
func CPUTime(root string, pid int) time.Duration {
	dir := filepath.Join(root, strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if f := bytes.Fields(data); len(f) > 0 {
			if n, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
				sum += time.Duration(n)
			}
		}
	}
	return sum
}
