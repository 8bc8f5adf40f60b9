package drainwatch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/proc"
)

// procRoot is where proc is mounted. /proc/net is the network namespace of the reader:
// drainit's, which is the app's.
const procRoot = "/proc"

func systemEnv(cfg Config) env {
	return env{
		now:     cfg.Now,
		wait:    waitUntil(cfg.Now),
		measure: threadCPU,
		cpu:     processCPU,
		open: func(cfg Config) (sampler, Setup, error) {
			return openSystem(cfg, systemOptions{proc: procRoot, self: os.Getpid()})
		},
	}
}

// systemCounter reads the PassiveOpens counter of drainit's network namespace, which is the
// app's.
func systemCounter() func() (uint64, error) {
	return proc.NewPassiveOpensReader(procRoot, os.Getpid()).Read
}

// processCPU is the CPU time, user and system, the whole process has used.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU runs f on one thread and returns the CPU time (user and kernel) that thread spent,
// which for reading the TCP table is mostly the kernel's.
func threadCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var t0, t1 unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0) != nil {
		f()
		return 0
	}
	f()
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t1)
	return time.Duration(t1.Nano() - t0.Nano())
}

// systemOptions are openSystem's knobs for tests.
type systemOptions struct {
	proc  string
	self  int    // drainit's pid: its own listening sockets are not the app's
	force Method // "": choose; else this method or an error
	// denied, in tests, are pids whose descriptors read as another user's would.
	denied []int
}

// listener is a listening socket of the TCP table.
type listener struct {
	config.Endpoint
	inode uint64
	v6    bool
	uid   uint32 // its owner
}

// openSystem finds the listening sockets to watch and picks the cheapest method that counts
// their new connections correctly. The Setup says what was found, with an *UnwatchableError too.
func openSystem(cfg Config, o systemOptions) (_ sampler, setup Setup, _ error) {
	var diag *diagConn
	if o.force != MethodProcNet {
		diag, _ = openDiag() // unavailable (seccomp, gVisor): /proc/net/tcp instead
	}
	ok := false
	defer func() {
		if !ok && diag != nil {
			diag.close()
		}
	}()
	if o.force == MethodSockDiag && diag == nil {
		return nil, setup, errors.New("netlink sock_diag is unavailable")
	}
	all, err := listeningSockets(diag, o.proc)
	if err != nil && diag != nil && o.force != MethodSockDiag {
		// sock_diag without its tcp_diag part (a module that could not be loaded): the text
		// tables instead.
		diag.close()
		diag = nil
		all, err = listeningSockets(nil, o.proc)
	}
	if err != nil {
		return nil, setup, err
	}

	watched, setup, err := watchedListeners(cfg, o, all)
	if err != nil {
		return nil, setup, err
	}
	endpoints, v4, v6 := watchedEndpoints(watched)
	var s sampler
	if o.force == "" || o.force == MethodPassiveOpens {
		s = passiveOpensSampler(cfg, o.proc, o.self, all, watched, endpoints)
		if s == nil && o.force == MethodPassiveOpens {
			return nil, setup, errors.New("the passive-opens method does not apply")
		}
	}
	if s == nil && diag != nil {
		s = newDiagSampler(diag, endpoints, v4, v6)
	}
	if s == nil {
		det := newDetector(endpoints)
		s = &procSampler{det: det, endpoints: endpoints, want: det.wants, add: det.add, v4: v4, v6: v6,
			tcp: filepath.Join(o.proc, "net/tcp"), tcp6: filepath.Join(o.proc, "net/tcp6")}
	}
	ok = true
	if _, isDiag := s.(*diagSampler); !isDiag && diag != nil {
		diag.close()
	}
	setup.Method = s.method()
	// The open connections, with what each has received: counted as traffic with cfg.Requests,
	// else read once at the end (busyConns).
	if o.force != MethodProcNet {
		if w := newRequestWatch(endpoints, v4, v6); w != nil {
			return &requestSampler{sampler: s, now: cfg.withDefaults().Now, w: w, count: cfg.Requests}, setup, nil
		}
	}
	if cfg.Requests {
		s.close()
		return nil, setup, errors.New("watching requests on open connections (--drain-watch requests) needs netlink sock_diag, which is unavailable here")
	}
	return s, setup, nil
}

// watchedListeners picks what a drain watches out of all (the namespace's TCP listeners): those
// --drain-ports matches, or else the app's (appListeners); and says what it found.
func watchedListeners(cfg Config, o systemOptions, all []listener) ([]listener, Setup, error) {
	if len(cfg.Ports) == 0 {
		return appListeners(cfg, o, all)
	}
	var watched []listener
	var setup Setup
	for _, l := range all {
		if slices.ContainsFunc(cfg.Ports, func(p config.Endpoint) bool { return p.Matches(l.Addr, l.Port) }) {
			watched = append(watched, l)
			setup.Watched = append(setup.Watched, Listener{Proto: "tcp", Endpoint: l.Endpoint})
		} else {
			setup.Unwatched = append(setup.Unwatched, Listener{Proto: "tcp", Endpoint: l.Endpoint, Why: whyNotInPorts})
		}
	}
	if len(watched) == 0 {
		return nil, setup, fmt.Errorf("no listening TCP socket matches the drain ports %s", endpointList(cfg.Ports))
	}
	return watched, setup, nil
}

// watchedEndpoints is the watched listeners' endpoints, each once, and which tables (tcp, tcp6) hold
// their connections.
func watchedEndpoints(watched []listener) (eps []config.Endpoint, v4, v6 bool) {
	for _, l := range watched {
		if !slices.Contains(eps, l.Endpoint) {
			eps = append(eps, l.Endpoint)
		}
		v4, v6 = v4 || !l.v6, v6 || l.v6
	}
	return eps, v4, v6
}

// appListeners picks the app's listeners out of all (the namespace's TCP listeners) and says
// what it found of the others. The watch must see all the app's traffic: where a listener of the
// app's cannot be watched (a UNIX socket; UDP; a TCP listener that a process of the app's tree
// drainit may not read may hold), the error is an *UnwatchableError, and a watch of the rest
// would be no proof that the traffic stopped.
func appListeners(cfg Config, o systemOptions, all []listener) ([]listener, Setup, error) {
	var setup Setup
	// Everything under the adopter holds the app's tree and what it adopted: one walk, with the
	// app first, as socketInodes wants its root.
	below := cfg.AppPID
	if cfg.Adopter > 0 {
		below = cfg.Adopter
	}
	pids := []int{cfg.AppPID}
	for _, p := range proc.Below(o.proc, below) {
		if p != cfg.AppPID {
			pids = append(pids, p)
		}
	}
	readable := slices.DeleteFunc(slices.Clone(pids), func(p int) bool { return slices.Contains(o.denied, p) })
	inodes, unreadable, err := socketInodes(o.proc, readable)
	if err != nil {
		return nil, setup, fmt.Errorf("finding the app's sockets: %w", err)
	}
	for _, p := range pids {
		if slices.Contains(o.denied, p) {
			unreadable = append(unreadable, p)
		}
	}
	var own map[uint64]int
	if o.self > 0 {
		own, _, _ = socketInodes(o.proc, []int{o.self})
	}
	var watched []listener
	var cannot []Listener
	uids := treeUIDs(o.proc, pids, len(unreadable) > 0)
	for _, l := range all {
		found := Listener{Proto: "tcp", Endpoint: l.Endpoint}
		switch pid := inodes[l.inode]; {
		case pid > 0:
			found.PID, found.Command = pid, proc.Command(o.proc, pid)
			watched = append(watched, l)
			setup.Watched = append(setup.Watched, found)
			continue
		case own[l.inode] > 0:
			found.Why = whyOwn
		case len(unreadable) > 0 && (uids == nil || uids[l.uid]):
			// Not the readable processes': a sidecar's, or one of the unreadable processes'
			// own (a setcap server, a worker of another user that opened a port of its own).
			// Made by a user that runs a process of the app's tree (or, where that is not
			// known, by anyone): the app's for all drainit can tell.
			found.Why = "held by no process drainit may read; it may be held by " + unreadableWhy(unreadable)
			cannot = append(cannot, found)
			continue
		default:
			found.Why = whyNotApps
		}
		setup.Unwatched = append(setup.Unwatched, found)
	}
	// The app's UDP and UNIX listeners: traffic the TCP table does not show.
	for _, read := range []func(string, map[uint64]int) ([]Listener, error){udpServers, unixListeners} {
		ls, err := read(o.proc, inodes)
		if err != nil {
			return nil, setup, err
		}
		for _, l := range ls {
			l.Command = proc.Command(o.proc, l.PID)
			cannot = append(cannot, l)
		}
	}
	setup.Unwatched = append(setup.Unwatched, cannot...)
	if len(cannot) > 0 {
		return nil, setup, &UnwatchableError{Listeners: cannot}
	}
	if len(watched) == 0 && len(unreadable) > 0 {
		// A server whose workers hold its listeners and run as another user (haproxy with
		// `user haproxy`): what the app's own processes hold is not the whole story. Where
		// every listener of the namespace is found in readable processes, the unreadable ones
		// hold none of their own (workers inherit their parent's, as httpd's do).
		return nil, setup, fmt.Errorf("no listening TCP socket in the part of the app's process tree drainit may read (pid %d and %d descendants): it may not read the sockets of %s; name the app's ports in --drain-ports",
			cfg.AppPID, len(pids)-1, unreadableWhy(unreadable))
	}
	if len(watched) == 0 {
		return nil, setup, fmt.Errorf("no listening TCP socket in the app's process tree (pid %d and %d descendants)", cfg.AppPID, len(pids)-1)
	}
	return watched, setup, nil
}

// treeUIDs is the set of users the processes pids run as (each one's real, effective, saved and
// file-system uid: a listener's owner is its maker's fsuid then, and a worker that has changed
// its user since still has the others), when want; nil when not wanted or when a process's
// cannot be read (then any owner may be the app's). A listener made by none of them is not the
// app's, whoever holds it: a mesh sidecar runs as a user of its own (Istio's 1337, Linkerd's
// 2102).
func treeUIDs(root string, pids []int, want bool) map[uint32]bool {
	if !want {
		return nil
	}
	uids := map[uint32]bool{}
	for _, pid := range pids {
		v, err := proc.StatusField(root, pid, "Uid")
		f := strings.Fields(v)
		if err != nil || len(f) != 4 {
			if errors.Is(err, os.ErrNotExist) {
				continue // gone since it was listed
			}
			return nil
		}
		for _, s := range f {
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return nil
			}
			uids[uint32(n)] = true
		}
	}
	return uids
}

// unreadableWhy names the processes of the app's tree whose descriptors drainit may not read,
// and the two reasons there are.
func unreadableWhy(pids []int) string {
	return "pid " + pidList(pids) + " of the app's tree, whose sockets drainit may not read (another user's, which takes CAP_SYS_PTRACE, or a process that is not dumpable: setuid, setcap)"
}

// unixListeners lists the listening UNIX sockets among inodes (the app's), from /proc/net/unix.
func unixListeners(procRoot string, inodes map[uint64]int) ([]Listener, error) {
	var buf []byte
	data, err := readAll(filepath.Join(procRoot, "net/unix"), &buf)
	if err != nil {
		return nil, fmt.Errorf("reading the UNIX socket table: %w", err)
	}
	var out []Listener
	parseProcNetUnix(data, func(u unixListener) {
		if pid := inodes[u.inode]; pid > 0 {
			out = append(out, Listener{Proto: "unix", Path: u.path, PID: pid, Why: whyUNIX})
		}
	})
	return out, nil
}

// listeningSockets lists the LISTEN sockets of the network namespace: through sock_diag when
// diag is not nil (the listening hash only: cheap), else from /proc/net/tcp and tcp6.
func listeningSockets(diag *diagConn, proc string) ([]listener, error) {
	var out []listener
	add := func(s *Socket) {
		if s.State == Listen {
			out = append(out, listener{config.Endpoint{Addr: s.Local.Addr(), Port: s.Local.Port()}, s.Inode, s.V6, s.UID})
		}
	}
	if diag != nil {
		if err := diag.dump(unix.AF_INET, statesListen, nil, add); err != nil {
			return nil, err
		}
		// Without IPv6 in the kernel there is no AF_INET6 table to dump, and no IPv6 listener.
		_ = diag.dump(unix.AF_INET6, statesListen, nil, add)
		return out, nil
	}
	var buf []byte
	if err := readProcNet(proc, "tcp", &buf, func(_ uint16, st State) bool { return st == Listen }, add); err != nil {
		return nil, err
	}
	return out, nil
}

// readProcNet parses /proc/net/PROTO and PROTO6 (tcp or udp) into *buf, as parseProcNet does;
// PROTO6 is missing where IPv6 is disabled.
func readProcNet(proc, proto string, buf *[]byte, want func(uint16, State) bool, fn func(*Socket)) error {
	for _, v6 := range []bool{false, true} {
		name := "net/" + proto
		if v6 {
			name += "6"
		}
		data, err := readAll(filepath.Join(proc, name), buf)
		if errors.Is(err, os.ErrNotExist) && v6 {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the %s table: %w", strings.ToUpper(proto), err)
		}
		if err := parseProcNet(data, v6, want, fn); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// socketInodes collects the socket inodes of the processes' file descriptors, each with the first
// process found holding it. Only the first process (the root) must be readable: the others may
// have exited since they were listed, or drainit may not read them (unreadable).
func socketInodes(procRoot string, pids []int) (inodes map[uint64]int, unreadable []int, err error) {
	inodes = map[uint64]int{}
	for i, pid := range pids {
		in, err := proc.SocketInodes(procRoot, pid)
		if err != nil {
			if i == 0 {
				return nil, nil, fmt.Errorf("the file descriptors of pid %d: %w", pid, err)
			}
			if errors.Is(err, os.ErrPermission) {
				unreadable = append(unreadable, pid)
			}
			continue
		}
		for n := range in {
			if inodes[n] == 0 {
				inodes[n] = pid
			}
		}
	}
	return inodes, unreadable, nil
}

// pidList is pids for a message: "12", "12, 14".
func pidList(pids []int) string {
	parts := make([]string, len(pids))
	for i, p := range pids {
		parts[i] = strconv.Itoa(p)
	}
	return strings.Join(parts, ", ")
}

// passiveOpensSampler returns the passive-opens sampler when it applies: every listening socket
// of the namespace is watched, or is drainit's own and cfg.SelfAccepted counts what it accepts;
// and the counter can be read. Else nil.
func passiveOpensSampler(cfg Config, procRoot string, self int, all, watched []listener, endpoints []config.Endpoint) sampler {
	mine := map[uint64]bool{}
	for _, l := range watched {
		mine[l.inode] = true
	}
	var selfInodes map[uint64]int
	for _, l := range all {
		if mine[l.inode] {
			continue
		}
		if selfInodes == nil {
			selfInodes, _, _ = socketInodes(procRoot, []int{self})
		}
		if selfInodes[l.inode] == 0 || cfg.SelfAccepted == nil {
			return nil
		}
	}
	s := &counterSampler{endpoints: endpoints, self: cfg.SelfAccepted, read: proc.NewPassiveOpensReader(procRoot, self).Read}
	if _, err := s.read(); err != nil {
		return nil
	}
	return s
}

// diagSampler counts new connections in sock_diag dumps.
type diagSampler struct {
	diag      *diagConn
	det       *detector
	endpoints []config.Endpoint
	filter    []byte
	v4, v6    bool          // which tables hold the watched listeners' connections
	add       func(*Socket) // det.add, bound once
}

// newDiagSampler counts, over diag, the new connections to endpoints in the tables v4 and v6
// name.
func newDiagSampler(diag *diagConn, endpoints []config.Endpoint, v4, v6 bool) *diagSampler {
	det := newDetector(endpoints)
	return &diagSampler{diag: diag, det: det, endpoints: endpoints, add: det.add, v4: v4, v6: v6, filter: endpointFilter(endpoints)}
}

func (s *diagSampler) sample() (int, error) {
	s.det.begin()
	if err := s.diag.dumpTables(s.v4, s.v6, statesConns, s.filter, s.add); err != nil {
		return 0, err
	}
	return s.det.end(), nil
}

func (s *diagSampler) method() Method             { return MethodSockDiag }
func (s *diagSampler) watched() []config.Endpoint { return s.endpoints }
func (s *diagSampler) close()                     { s.diag.close() }

// procSampler counts new connections in /proc/net/tcp and tcp6.
type procSampler struct {
	det       *detector
	endpoints []config.Endpoint
	tcp, tcp6 string
	v4, v6    bool
	buf       []byte
	want      func(uint16, State) bool // det.wants and det.add, bound once: not per poll
	add       func(*Socket)
}

func (s *procSampler) sample() (int, error) {
	s.det.begin()
	for _, t := range []struct {
		on   bool
		path string
		v6   bool
	}{{s.v4, s.tcp, false}, {s.v6, s.tcp6, true}} {
		if !t.on {
			continue
		}
		data, err := readAll(t.path, &s.buf)
		if err != nil {
			return 0, err
		}
		if err := parseProcNet(data, t.v6, s.want, s.add); err != nil {
			return 0, fmt.Errorf("%s: %w", t.path, err)
		}
	}
	return s.det.end(), nil
}

func (s *procSampler) method() Method             { return MethodProcNet }
func (s *procSampler) watched() []config.Endpoint { return s.endpoints }
func (s *procSampler) close()                     {}

// endpointList is es as --drain-ports reads them, comma-separated.
func endpointList(es []config.Endpoint) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ",")
}
