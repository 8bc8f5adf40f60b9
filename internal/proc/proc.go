// Package proc reads the few things drainit needs from /proc: parents, descendants, the sockets a
// process holds, and one TCP counter; and from its own control group, found through /proc, the pids
// limit and the OOM kills (cgroup.go). It is small on purpose: github.com/prometheus/procfs does
// all this and far more, but compiles regular expressions when the package loads, which cost
// drainit 0.15-0.25 ms on every container start (GODEBUG=inittrace=1).
//
// It is also where the tests, the harnesses and the benchmark read a process's /proc files
// (stat.go, process.go): one parser of /proc/PID/stat (ParseStat) for all of them; the linker
// leaves out of drainit's binary what drainit does not use. What only they read (the machine's
// load, a process's CPU time) is in integration/testenv.
package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// Descendants lists every process below pid in the process tree, breadth first, from every
// process's parent. Processes fork and exit meanwhile: the answer is a snapshot, and as the
// parents are read one after the other a reused pid can make it show a cycle, which is walked
// once.
func Descendants(root string, pid int) []int {
	children := map[int][]int{}
	for _, p := range Pids(root) {
		if st, err := ReadStat(root, p); err == nil {
			children[st.PPID] = append(children[st.PPID], p)
		}
	}
	return walk(pid, func(p int) []int { return children[p] })
}

// Tree lists every process below pid, breadth first, as Descendants does, but from the kernel's
// list of each process's children (Children): it reads the files of pid's tree only, where
// Descendants reads every process's on the machine, so that a pid it returns was seen a few
// microseconds per process earlier rather than a whole scan of /proc earlier (with 1,000 other
// processes, a SIGKILL sent after each Descendants never caught a process that forks and exits
// every few hundred microseconds; after each Tree it did within 0.2 s). ok is false when the
// kernel keeps no such lists (CONFIG_PROC_CHILDREN unset), or pid's own cannot be read: use
// Descendants then. The kernel's lists can miss a child that is being created or is exiting as
// they are read (proc(5)), as a scan of /proc can: callers that must reach everything repeat the
// walk (the kill loop does, at each reap).
func Tree(root string, pid int) (tree []int, ok bool) {
	if _, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "task", strconv.Itoa(pid), "children")); err != nil {
		return nil, false
	}
	return walk(pid, func(p int) []int { return Children(root, p) }), true
}

// Below lists every process below pid, breadth first: Tree where the kernel keeps lists of
// children, else Descendants.
func Below(root string, pid int) []int {
	if tree, ok := Tree(root, pid); ok {
		return tree
	}
	return Descendants(root, pid)
}

// walk lists every process below pid, breadth first, given each process's children. A reused
// pid can make the lists show a cycle, which is walked once.
func walk(pid int, children func(int) []int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children(p) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// SocketInodes returns the inodes of the sockets among pid's open files (links "socket:[N]"
// under ROOT/PID/fd). The error wraps os.ErrPermission where drainit may not read them: another
// user's process (one that changed its user, as a server's workers do, included), unless drainit
// has CAP_SYS_PTRACE.
func SocketInodes(root string, pid int) (map[uint64]bool, error) {
	dir := filepath.Join(root, strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[uint64]bool{}
	for _, e := range entries {
		t, err := os.Readlink(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrPermission) {
			// Root lists the directory (CAP_DAC_OVERRIDE) whatever its owner, but reading a
			// link takes the right to trace the process, which a container's root lacks.
			return nil, err
		}
		if err != nil {
			continue // closed meanwhile
		}
		if n, ok := socketInode(t); ok {
			out[n] = true
		}
	}
	return out, nil
}

// socketInode reads the inode of a socket from the target of its /proc/PID/fd link,
// "socket:[N]"; other files (pipes "pipe:[N]", paths, anon_inode:[eventfd]) are no socket.
func socketInode(link string) (uint64, bool) {
	return bracketed(link, "socket:[")
}

// bracketed reads the number N of a link target "PREFIXN]" (prefix ends with the '['): the
// inode in /proc's "socket:[N]" and "pid:[N]".
func bracketed(link, prefix string) (uint64, bool) {
	rest, ok := strings.CutPrefix(link, prefix)
	if !ok {
		return 0, false
	}
	num, ok := strings.CutSuffix(rest, "]")
	if !ok || !digits([]byte(num)) {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	return n, err == nil
}
