package drainwatch

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/drainit/drainit/internal/config"
)

// Listener is a socket that takes traffic in, as the drain's setup found it: one of the app's
// (PID not zero), or another listener of the network namespace.
type Listener struct {
	Proto    string          // "tcp", "udp" or "unix"
	Endpoint config.Endpoint // tcp and udp
	Path     string          // unix: the socket's path ("@name" for an abstract one)
	PID      int             // the process of the app's tree that holds it; 0: none drainit could read
	Command  string          // that process's command name
	// Why, for a listener that is not watched, says why; empty for a watched one.
	Why string
}

// Where the unwatched listeners' reasons are phrased once, for the log and the tests.
const (
	whyNotApps    = "not the app's"
	whyOwn        = "drainit's own"
	whyNotInPorts = "not in --drain-ports"
	whyUNIX       = "a UNIX socket: the adaptive drain counts TCP connections"
	whyUDP        = "UDP: Linux counts no socket's datagrams"
)

// String is the listener for a log line: "tcp 0.0.0.0:8080 (pid 12 nginx)", with ": why" for
// one that is not watched.
func (l Listener) String() string {
	if l.Why == "" {
		return l.Where()
	}
	return l.Where() + ": " + l.Why
}

// Where is the listener without why: "tcp 0.0.0.0:8080 (pid 12 nginx)", `unix "/run/app.sock"`.
func (l Listener) Where() string {
	var b strings.Builder
	b.WriteString(l.Proto)
	b.WriteByte(' ')
	if l.Proto == "unix" {
		b.WriteString(strconv.Quote(l.Path))
	} else {
		b.WriteString(l.Endpoint.String())
	}
	switch {
	case l.PID > 0 && l.Command != "":
		fmt.Fprintf(&b, " (pid %d %s)", l.PID, l.Command)
	case l.PID > 0:
		fmt.Fprintf(&b, " (pid %d)", l.PID)
	}
	return b.String()
}

// ByWhy groups ls by why, in the order each why first comes: a reason is ~200 bytes where an
// unreadable process holds the socket, and said once for all its listeners a log line keeps every
// one of them within its 4096 bytes (logline.Cut) on a host with hundreds.
func ByWhy(ls []Listener) (whys []string, where [][]string) {
	for _, l := range ls {
		i := slices.Index(whys, l.Why)
		if i < 0 {
			i = len(whys)
			whys, where = append(whys, l.Why), append(where, nil)
		}
		where[i] = append(where[i], l.Where())
	}
	return whys, where
}

// Setup is what a drain watches, found at its start: the method, the app's listeners it
// watches, and every other listener it knows of, each with why it is not watched.
type Setup struct {
	Method    Method
	Watched   []Listener
	Unwatched []Listener
}

// UnwatchableError is why the watch is unavailable when some of the app's listeners cannot be
// watched (a UNIX socket, UDP, or a TCP listener that may be held by a process of the app's tree
// that drainit may not read): a watch of the others would end the drain while traffic still comes
// through those, so the caller falls back to its fixed delay.
type UnwatchableError struct {
	Listeners []Listener // each with its Why
}

func (e *UnwatchableError) Error() string {
	whys, where := ByWhy(e.Listeners)
	parts := make([]string, len(whys))
	for i, why := range whys {
		parts[i] = strings.Join(where[i], ", ") + ": " + why
	}
	return "the adaptive drain cannot see all the app's traffic: " + strings.Join(parts, "; ")
}

// unixListener is a listening UNIX socket of /proc/net/unix.
type unixListener struct {
	inode uint64
	path  string
}

// unixAcceptCon is __SO_ACCEPTCON in /proc/net/unix's Flags: the socket listens.
const unixAcceptCon = 1 << 16

// parseProcNetUnix calls fn for each listening stream or seqpacket socket of /proc/net/unix:
//
//	Num       RefCount Protocol Flags    Type St Inode Path
//	0000000000000000: 00000002 00000000 00010000 0001 01 23906 /run/app.sock
//
// A line it cannot read is passed over: a path may hold a newline, which the kernel prints as it
// is, and what follows it is no entry. (A path that forges an entry can at worst make drainit
// take a socket of the app's for a UNIX listener: the fixed drain, the safe side.)
func parseProcNetUnix(data []byte, fn func(unixListener)) {
	_, data, _ = bytes.Cut(data, []byte("\n")) // the header
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 7 || !bytes.HasSuffix(f[0], []byte(":")) {
			continue
		}
		flags, err1 := strconv.ParseUint(string(f[3]), 16, 32)
		typ, err2 := strconv.ParseUint(string(f[4]), 16, 16)
		inode, err3 := strconv.ParseUint(string(f[6]), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || flags&unixAcceptCon == 0 || inode == 0 {
			continue
		}
		if typ != 1 && typ != 5 { // SOCK_STREAM, SOCK_SEQPACKET: the kinds that listen
			continue
		}
		fn(unixListener{inode, string(afterFields(line, 7))})
	}
}

// afterFields is what follows the first n space-separated fields of line, leading spaces cut:
// the path of a /proc/net/unix entry, spaces and all.
func afterFields(line []byte, n int) []byte {
	for range n {
		line = bytes.TrimLeft(line, " \t")
		i := bytes.IndexAny(line, " \t")
		if i < 0 {
			return nil
		}
		line = line[i:]
	}
	return bytes.TrimLeft(line, " \t")
}
