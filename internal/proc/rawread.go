package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ReadSmall reads the whole file at path into buf (from its length 0, growing it as needed) with
// plain syscalls; a file longer than limit bytes is an error (0: no limit). os.Open's file stats
// it and registers it with the Go poller, syscalls that drainit's start (StatLine) and the
// adaptive drain's polls every 20 ms (PassiveOpensReader) would pay on every read; and
// os.ReadFile allocates a buffer of the size a file under /sys claims (4 KiB), for which the Go
// runtime then holds a span of that size class for good (a cgroup's pids.max, read off the start
// path).
func ReadSmall(path string, buf []byte, limit int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf = buf[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, 1024)
	}
	for {
		if len(buf) == cap(buf) {
			if limit > 0 && len(buf) >= limit {
				return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("longer than %d bytes", limit)}
			}
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// StatLine reads ROOT/PID/stat (root is "/proc" but for tests) with plain syscalls, for
// ParseStat and ParseStartTime, on drainit's start path. A line longer than 64 KiB (a fake root)
// is an error.
func StatLine(root string, pid int) ([]byte, error) {
	return ReadSmall(filepath.Join(root, strconv.Itoa(pid), "stat"), nil, 64<<10)
}

// PIDNamespaceInode is the inode that names pid's PID namespace, from the link ROOT/PID/ns/pid
// ("pid:[INODE]"), with one readlink; PIDNamespace gives the link's text.
func PIDNamespaceInode(root string, pid int) (uint64, error) {
	path := filepath.Join(root, strconv.Itoa(pid), "ns", "pid")
	var buf [64]byte // "pid:[" and at most 20 digits
	n, err := unix.Readlink(path, buf[:])
	if err != nil {
		return 0, &os.PathError{Op: "readlink", Path: path, Err: err}
	}
	link := string(buf[:n])
	if inode, ok := bracketed(link, "pid:["); ok {
		return inode, nil
	}
	return 0, errors.New(path + ": " + strconv.Quote(link) + " is not pid:[INODE]")
}
