package control

import (
	"os"

	"golang.org/x/sys/unix"
)

// descriptors returns this process's RLIMIT_NOFILE and how many descriptors it has open, or
// ok false when either cannot be read.
func descriptors() (nofile uint64, open int, ok bool) {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return 0, 0, false
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	return lim.Cur, len(fds), true
}
