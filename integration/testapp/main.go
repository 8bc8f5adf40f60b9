// Command testapp is the app the integration tests, the benchmarks and the rollout harness run
// under drainit (and under tini, dumb-init, catatonit). It is static, so it also runs in an image
// built FROM scratch. Each mode is one behaviour a test needs; output lines go to stdout, each a
// single write so that lines from several processes sharing the pipe never interleave.
//
//	testapp exit N                 exit with status N
//	testapp die SIG                be killed by signal SIG
//	testapp sleep DURATION         sleep, then exit 0
//	testapp signals [-grandchild]
//	                               print "ready <who> <pid>", then "got <who> <SIGNAME>" for each
//	                               signal; exit 0 on SIGTERM. -grandchild also starts a second
//	                               process in the same group that does the same as "gc".
//	testapp wait-signal SIG DURATION
//	                               print "ready app <pid>" once SIG is caught; exit 0 when SIG
//	                               arrives, 3 if DURATION passes first
//	testapp orphans N [-code C]    leave N orphans (grandchildren whose parent exits first), wait
//	                               for their parents, exit C
//	testapp daemon [-ignore-term] [-fork-loop D]
//	                               start a setsid'd daemon that prints "daemon <pid>", exit 0;
//	                               -fork-loop: the daemon forks on and on for D, each process
//	                               exiting as soon as it has forked the next
//	testapp reuse-pid CODE REUSE   leave a helper behind and exit CODE; once this process is gone
//	                               (reaped), the helper makes a process that gets this pid again
//	                               (as PID 1's namespace allows: /proc/sys/kernel/ns_last_pid,
//	                               root) and exits REUSE; it prints "reused <pid>" or "missed"
//	testapp tree [-addr A] [-hold WHO,...]
//	                               a container's processes in a pod that shares its PID
//	                               namespace: this process ("app"), a member of its group ("gc"),
//	                               an orphan left in its group ("orphan"), a setsid'd daemon
//	                               (double fork: "daemon") and an orphan that exits at once
//	                               ("exited <pid>"). Each prints "ready <who> <pid>" and "got <who>
//	                               <SIGNAME>" for each signal, and exits on SIGTERM unless it is
//	                               among -hold; "ready app <pid>" comes once all are set up. -addr:
//	                               the app also serves HTTP there
//	testapp fill-pids [-after D]   print "ready app <pid>"; after D fork until the pids limit is
//	                               reached, print "pids full N", and hold it; exit 0 on SIGTERM
//	testapp eat-memory [DELAY]     print "ready app <pid>", after DELAY allocate and touch memory
//	                               until the OOM killer ends it, printing "ate N MiB" every 16 MiB
//	testapp ignore-term            print "ready app <pid>", ignore SIGTERM, run until killed
//	testapp slow-stop DURATION     print "ready app <pid>"; on SIGTERM wait DURATION, exit 0
//	testapp affinity               print "affinity app=LIST parent=LIST[,LIST…]": the CPUs this
//	                               process may run on and those of each of its parent's threads
//	                               (Cpus_allowed_list, the distinct ones in order), exit 0
//	testapp serve -addr A [-graceful|-naive] [-delay D] [-name NAME]
//	                               HTTP server; each request takes D; -graceful finishes
//	                               in-flight requests and closes idle connections on SIGTERM,
//	                               -naive exits at once; it answers "ok <pid>", or "ok NAME"
//	testapp serve-udp -addr A -udp U
//	                               a DNS-like server: an HTTP server on TCP A (as serve) and a
//	                               UDP echo on U; prints "ready app <pid> <tcp> <udp>"; on
//	                               SIGTERM prints "udp received N" and exits at once
//	testapp get -n N -every D URL  make N requests to URL, each on a new connection, D apart;
//	                               print "got <status> <RFC 3339 time>" after each; fail on the
//	                               first error or non-200 status
//	testapp _sigconf IGN BLK -- PROG [ARG...]
//	                               exec PROG (searched in PATH) with exactly the signals of IGN
//	                               ignored and those of BLK blocked (SIG[,SIG...], names or
//	                               numbers, or -), which PROG and its children inherit
//	testapp _netns -- PROG [ARG...]
//	                               exec PROG (searched in PATH) in a new network namespace whose
//	                               loopback is up: a pod's own network (root)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/drainit/drainit/signals"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testapp MODE [ARGS]")
		os.Exit(2)
	}
	mode, args := os.Args[1], os.Args[2:]
	var err error
	switch mode {
	case "exit":
		n, _ := strconv.Atoi(arg(args, 0))
		os.Exit(n)
	case "die":
		err = die(arg(args, 0))
	case "sleep":
		d, _ := time.ParseDuration(arg(args, 0))
		time.Sleep(d)
	case "signals":
		err = signalsMode(args)
	case "wait-signal":
		err = waitSignal(args)
	case "orphans":
		err = orphans(args)
	case "daemon":
		err = daemon(args)
	case "tree":
		err = tree(args)
	case "eat-memory":
		err = eatMemory(args)
	case "fill-pids":
		err = fillPids(args)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		say("ready app %d", os.Getpid())
		forever()
	case "slow-stop":
		err = slowStop(args)
	case "affinity":
		err = affinity()
	case "serve":
		err = serve(args)
	case "get":
		err = get(args)
	case "serve-udp":
		err = serveUDP(args)
	case "reuse-pid":
		err = reusePid(args)
	// Internal modes, started by the ones above.
	case "_record":
		err = record(arg(args, 0), false, nil)
	case "_orphan-parent":
		err = orphanParent(args)
	case "_block":
		// Wait for EOF on fd 3: the parent holding the write end has exited.
		buf := make([]byte, 1)
		_, _ = os.NewFile(3, "block").Read(buf)
	case "_daemon":
		err = daemonChild(args)
	case "_member":
		err = member(arg(args, 0), arg(args, 1) == "hold")
	case "_leave":
		err = leave(args)
	case "_exited":
		err = exitedOrphan()
	case "_reuse-pid":
		err = reusePidChild(args)
	case "_reused":
		// Outlive the helper: its exit makes this process drainit's child.
		parent, deadline := os.Getppid(), time.Now().Add(5*time.Second)
		for os.Getppid() == parent && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		n, _ := strconv.Atoi(arg(args, 0))
		os.Exit(n)
	// A launcher for tests, not started by the modes above.
	case "_sigconf":
		err = sigconfExec(args)
	case "_netns":
		err = netnsExec(args)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testapp %s: %v\n", mode, err)
		os.Exit(2)
	}
}

func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// say prints one line in a single write.
func say(format string, a ...any) {
	_, _ = os.Stdout.WriteString(fmt.Sprintf(format, a...) + "\n")
}

func self() string {
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}

func die(name string) error {
	sig := signalByName(name)
	if sig == 0 {
		return fmt.Errorf("unknown signal %q", name)
	}
	// signal.Reset gives the signal back to the Go runtime, whose own handler turns QUIT (and
	// ABRT) into a goroutine dump and exit 2. The kernel's default action is what "killed by SIG"
	// means, so the handler is set to SIG_DFL directly (struct sigaction all zero: SIG_DFL, no
	// flags, empty mask). KILL and STOP have no handler to reset.
	signal.Reset(sig)
	if sig != syscall.SIGKILL && sig != syscall.SIGSTOP {
		var sa [4]uint64
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
			uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); errno != 0 {
			return fmt.Errorf("rt_sigaction(%s, SIG_DFL): %w", signame(sig), errno)
		}
	}
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Minute)
	return errors.New("signal did not kill")
}

// signalByName reads a signal as drainit does ("TERM", "SIGTERM", "15"); 0 if unknown.
func signalByName(name string) syscall.Signal {
	sig, err := signals.Parse(name)
	if err != nil {
		return 0
	}
	return sig
}

// signame is the SIGNAME of s, as drainit's logs write it.
func signame(s syscall.Signal) string { return signals.Name(s) }

// recorded are the signals the signals mode reports. TSTP, TTIN and TTOU are left out: caught,
// they would no longer stop the process, which the job-control tests rely on.
var recorded = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGTERM, syscall.SIGALRM,
	// Sent ones only: Go hands os/signal no fault of the program's own.
	syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSYS,
}

func signalsMode(args []string) error {
	fs := flag.NewFlagSet("signals", flag.ContinueOnError)
	gc := fs.Bool("grandchild", false, "also start a recording grandchild in the same group")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *gc {
		// Same process group (no Setpgid): group-wide signals reach it, child-only ones do not.
		if _, err := syscall.ForkExec(self(), []string{self(), "_record", "gc"}, &syscall.ProcAttr{
			Env: os.Environ(), Files: []uintptr{0, 1, 2},
		}); err != nil {
			return err
		}
	}
	return record("app", false, nil)
}

// record prints every recorded signal until SIGTERM, then exits 0; with hold, SIGTERM is
// recorded as the others are and only SIGKILL ends it. ready, when not nil, is closed once the
// handlers are in place.
func record(who string, hold bool, ready *os.File) error {
	ch := make(chan os.Signal, 32)
	signal.Notify(ch, recorded...)
	say("ready %s %d", who, os.Getpid())
	if ready != nil {
		_ = ready.Close()
	}
	for s := range ch {
		say("got %s %s", who, signame(s.(syscall.Signal)))
		if s == syscall.SIGTERM && !hold {
			return nil
		}
	}
	return nil
}

// tree starts a container's processes as a pod that shares its PID namespace has them: a member
// of this process's group (gc), an orphan left in it (orphan), a daemon in a session of its own
// (a double fork and setsid), and an orphan that exits as soon as it is one, which whoever
// adopted it must reap. All but the last record their signals; "ready app" comes once each has
// reported ready (closed its copy of the pipe).
func tree(args []string) error {
	fs := flag.NewFlagSet("tree", flag.ContinueOnError)
	addr := fs.String("addr", "", "also serve HTTP on this address")
	holdList := fs.String("hold", "", "who survives SIGTERM: app, gc, orphan, daemon (comma-separated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	hold := map[string]bool{}
	for _, who := range strings.Split(*holdList, ",") {
		hold[who] = true
	}
	if *addr != "" {
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		serveOK(ln)
	}
	memberArgs := func(who string) []string {
		if hold[who] {
			return []string{"_member", who, "hold"}
		}
		return []string{"_member", who}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	start := func(argv ...string) (int, error) {
		return syscall.ForkExec(self(), append([]string{self()}, argv...), &syscall.ProcAttr{
			Env: os.Environ(), Files: []uintptr{0, 1, 2, w.Fd()},
		})
	}
	if _, err := start(memberArgs("gc")...); err != nil {
		return err
	}
	var leavers []int
	for _, argv := range [][]string{
		append([]string{"_leave", "--"}, memberArgs("orphan")...),
		append([]string{"_leave", "-setsid", "--"}, memberArgs("daemon")...),
		{"_leave", "--", "_exited"},
	} {
		pid, err := start(argv...)
		if err != nil {
			return err
		}
		leavers = append(leavers, pid)
	}
	w.Close()
	for _, pid := range leavers {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
				break
			}
		}
	}
	// EOF once every process started has closed its copy: the members once set up, the
	// exited orphan as it exits.
	_, _ = io.Copy(io.Discard, r)
	return record("app", hold["app"], nil)
}

// member is one of tree's processes: it records signals once orphaned, if it is to be one.
func member(who string, hold bool) error {
	if err := awaitOrphaned(); err != nil {
		return err
	}
	return record(who, hold, os.NewFile(3, "ready"))
}

// leaverEnv names the process that left this one (leave): it is an orphan once its parent is
// no longer that one.
const leaverEnv = "TESTAPP_LEFT_BY"

// leave starts the rest of its arguments as a child, in a session of its own with -setsid,
// and exits at once: the child is an orphan, adopted by the nearest subreaper above or the PID
// namespace's init.
func leave(args []string) error {
	fs := flag.NewFlagSet("_leave", flag.ContinueOnError)
	setsid := fs.Bool("setsid", false, "start the child in a new session")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: _leave [-setsid] -- MODE [ARG...]")
	}
	if _, err := syscall.ForkExec(self(), append([]string{self()}, fs.Args()...), &syscall.ProcAttr{
		Env:   append(os.Environ(), fmt.Sprintf("%s=%d", leaverEnv, os.Getpid())),
		Files: []uintptr{0, 1, 2, 3},
		Sys:   &syscall.SysProcAttr{Setsid: *setsid},
	}); err != nil {
		return err
	}
	os.Exit(0)
	return nil
}

// awaitOrphaned returns once the process that left this one (leave) is no longer its parent;
// at once when no process left it.
func awaitOrphaned() error {
	leaver, err := strconv.Atoi(os.Getenv(leaverEnv))
	if err != nil {
		return nil
	}
	for deadline := time.Now().Add(5 * time.Second); os.Getppid() == leaver; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("never orphaned")
		}
	}
	return nil
}

// exitedOrphan waits until it is an orphan, says so with the parent that adopted it ("exited
// <pid> <parent>") and exits 0.
func exitedOrphan() error {
	if err := awaitOrphaned(); err != nil {
		return err
	}
	say("exited %d %d", os.Getpid(), os.Getppid())
	return nil
}

func waitSignal(args []string) error {
	sig := signalByName(arg(args, 0))
	d, err := time.ParseDuration(arg(args, 1))
	if sig == 0 || err != nil {
		return errors.New("usage: wait-signal SIG DURATION")
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig)
	say("ready app %d", os.Getpid())
	select {
	case <-ch:
		say("got app %s", signame(sig))
		return nil
	case <-time.After(d):
		say("timeout app")
		os.Exit(3)
	}
	return nil
}

// orphans leaves N orphans in batches: each batch is one parent that starts its share of
// grandchildren and exits at once; the grandchildren block until that parent is gone, so every
// one of them is an orphan when it exits, and they never pile up in memory.
func orphans(args []string) error {
	fs := flag.NewFlagSet("orphans", flag.ContinueOnError)
	code := fs.Int("code", 0, "exit status")
	perParent := fs.Int("per-parent", 20, "grandchildren per parent")
	n, _ := strconv.Atoi(arg(args, 0))
	if err := fs.Parse(args[min(1, len(args)):]); err != nil {
		return err
	}
	for left := n; left > 0; left -= *perParent {
		k := min(left, *perParent)
		pid, err := syscall.ForkExec(self(), []string{self(), "_orphan-parent", strconv.Itoa(k)}, &syscall.ProcAttr{
			Env: os.Environ(), Files: []uintptr{0, 1, 2},
		})
		if err != nil {
			return err
		}
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err != syscall.EINTR {
				break
			}
		}
	}
	say("orphans %d", n)
	os.Exit(*code)
	return nil
}

func orphanParent(args []string) error {
	k, _ := strconv.Atoi(arg(args, 0))
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	for range k {
		if _, err := syscall.ForkExec(self(), []string{self(), "_block"}, &syscall.ProcAttr{
			Env: os.Environ(), Files: []uintptr{0, 1, 2, r.Fd()},
		}); err != nil {
			return err
		}
	}
	// w stays open until this process exits, which releases the grandchildren.
	runtime.KeepAlive(w)
	os.Exit(0)
	return nil
}

func daemon(args []string) error {
	a := append([]string{self(), "_daemon"}, args...)
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	if _, err := syscall.ForkExec(self(), a, &syscall.ProcAttr{
		Env: os.Environ(), Files: []uintptr{0, 1, 2, w.Fd()}, Sys: &syscall.SysProcAttr{Setsid: true},
	}); err != nil {
		return err
	}
	w.Close()
	// Wait until the daemon is set up (it closes its end), so the test can rely on it running.
	buf := make([]byte, 1)
	_, _ = r.Read(buf)
	return nil
}

func daemonChild(args []string) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM")
	forkLoop := fs.Duration("fork-loop", 0, "fork on and on for this long, each parent exiting")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	say("daemon %d", os.Getpid())
	if *forkLoop > 0 {
		// Made before the loop: the children run no Go code that could allocate.
		var now syscall.Timespec
		end := time.Now().Add(*forkLoop).UnixNano() // CLOCK_REALTIME, as time.Now
		_ = os.NewFile(3, "ready").Close()
		rawForkLoop(&now, end)
	}
	_ = os.NewFile(3, "ready").Close()
	forever()
	return nil
}

// rawForkLoop forks on and on: each process forks once and exits, its child doing the same, so
// that the daemon's pid changes every few hundred microseconds and one scan of /proc finds a
// pid that has already gone. It stops by itself at end (Unix nanoseconds), so that a test that
// fails to end it leaves nothing behind for long.
//
// Only raw system calls run after the first fork: the child of a multi-threaded Go program has
// one thread and a runtime it must not enter (no allocation, no stack growth, no scheduler), as
// in syscall.forkAndExecInChild. clone's other arguments are zero, so their order, which differs
// between architectures, does not matter.
//
//go:nosplit
//go:norace
func rawForkLoop(now *syscall.Timespec, end int64) {
	for {
		_, _, _ = syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 0 /* CLOCK_REALTIME */, uintptr(unsafe.Pointer(now)), 0)
		if now.Sec*1e9+now.Nsec > end {
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
		}
		pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
		if errno == 0 && pid != 0 {
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
		}
	}
}

// reusePid leaves a setsid'd helper that ignores SIGTERM and exits args[0].
func reusePid(args []string) error {
	code, _ := strconv.Atoi(arg(args, 0))
	pid := strconv.Itoa(os.Getpid())
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	if _, err := syscall.ForkExec(self(), []string{self(), "_reuse-pid", pid, arg(args, 1)}, &syscall.ProcAttr{
		Env: os.Environ(), Files: []uintptr{0, 1, 2, w.Fd()}, Sys: &syscall.SysProcAttr{Setsid: true},
	}); err != nil {
		return err
	}
	w.Close()
	// Exit only once the helper ignores SIGTERM (it closes its end): drainit's cleanup sends
	// SIGTERM to everything the moment the app is gone.
	buf := make([]byte, 1)
	_, _ = r.Read(buf)
	say("ready app %s", pid)
	os.Exit(code)
	return nil
}

// reusePidChild waits for the app (args[0]) to be reaped, then forks a child that gets its pid
// and exits with args[1] after this helper has exited, so that the child is reparented to
// drainit and drainit reaps it.
func reusePidChild(args []string) error {
	signal.Ignore(syscall.SIGTERM) // drainit's cleanup SIGTERM must not end the helper first
	_ = os.NewFile(3, "ready").Close()
	app, _ := strconv.Atoi(arg(args, 0))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(app, 0) == nil { // until the reaper has collected it
		if time.Now().After(deadline) {
			return errors.New("the app was never reaped")
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(app-1)), 0); err != nil {
		return err
	}
	pid, err := syscall.ForkExec(self(), []string{self(), "_reused", arg(args, 1)}, &syscall.ProcAttr{
		Env: os.Environ(), Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		return err
	}
	if pid == app {
		say("reused %d", pid)
	} else {
		say("missed %d", pid)
	}
	return nil
}

// forever blocks until the process is killed. A bare `select {}` does not do: with no other
// goroutine (signal.Ignore starts none) the runtime calls it a deadlock and exits 2 at once.
func forever() {
	for {
		time.Sleep(time.Hour)
	}
}

func slowStop(args []string) error {
	d, err := time.ParseDuration(arg(args, 0))
	if err != nil {
		return err
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	say("ready app %d", os.Getpid())
	<-ch
	say("got app SIGTERM")
	time.Sleep(d)
	say("stopped app")
	return nil
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	graceful := fs.Bool("graceful", false, "on SIGTERM finish in-flight requests, close idle connections, exit")
	naive := fs.Bool("naive", false, "on SIGTERM exit at once")
	delay := fs.Duration("delay", 0, "time each request takes")
	name := fs.String("name", "", "answer `ok NAME` instead of ok PID: two apps that are each PID 1 of a container of their own")
	unixPath := fs.String("unix", "", "serve on this UNIX socket too (as behind a sidecar proxy in the pod)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	answer := fmt.Sprintf("ok %d\n", os.Getpid())
	if *name != "" {
		answer = "ok " + *name + "\n"
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if *delay > 0 {
				time.Sleep(*delay)
			}
			_, _ = io.WriteString(w, answer)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() { _ = srv.Serve(ln) }()
	if *unixPath != "" {
		uln, err := net.Listen("unix", *unixPath)
		if err != nil {
			return err
		}
		go func() { _ = srv.Serve(uln) }()
	}
	say("ready app %d %s", os.Getpid(), ln.Addr())
	s := <-ch
	say("got app %s", signame(s.(syscall.Signal)))
	if *naive || !*graceful {
		os.Exit(0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return srv.Shutdown(ctx)
}

// get is a client for serve, run inside a container (podman exec) where the host cannot reach
// the app. Each request opens its own connection: the adaptive drain counts connections, and a
// kept-alive one would count once.
func get(args []string) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	n := fs.Int("n", 1, "requests to make")
	every := fs.Duration("every", 100*time.Millisecond, "time between requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: get -n N -every D URL")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range *n {
		if i > 0 {
			time.Sleep(*every)
		}
		resp, err := client.Get(fs.Arg(0))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("request %d: %s", i+1, resp.Status)
		}
		say("got %d %s", resp.StatusCode, time.Now().UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// sigconfExec execs PROG with exactly the signals in IGN ignored and exactly those in BLK
// blocked (comma-separated names or numbers, "-" for none), whatever this process started with:
// the integration tests start every drainit through it, so that a runner's own (nohup's ignored
// HUP, a blocked signal) cannot reach what they check. The dispositions are set raw
// (rt_sigaction: os/signal's Ignore cannot ignore SEGV); exec turns every handler, the Go
// runtime's included, into the default action and keeps SIG_IGN, and it keeps the calling
// thread's mask.
func sigconfExec(args []string) error {
	if len(args) < 4 || args[2] != "--" {
		return errors.New("usage: _sigconf IGN BLK -- PROG [ARG...] (IGN, BLK: SIG[,SIG...] or -)")
	}
	ign, err := sigList(args[0])
	if err != nil {
		return err
	}
	blk, err := sigList(args[1])
	if err != nil {
		return err
	}
	path, err := exec.LookPath(args[3])
	if err != nil {
		return err
	}
	type sigaction struct {
		handler, flags, restorer uintptr
		mask                     uint64
	}
	var set unix.Sigset_t
	for sig := syscall.Signal(1); sig <= signals.MaxSignal; sig++ {
		if sig == syscall.SIGKILL || sig == syscall.SIGSTOP {
			continue
		}
		var old sigaction
		act := sigaction{} // SIG_DFL
		if ign&(1<<(sig-1)) != 0 {
			act.handler = 1 // SIG_IGN
		}
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); errno != 0 {
			return fmt.Errorf("reading the action of signal %d: %w", sig, errno)
		}
		// Only what exec would keep needs setting: SIG_IGN, to be set or to be undone.
		if (old.handler == 1) != (act.handler == 1) {
			if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); errno != 0 {
				return fmt.Errorf("setting the action of signal %d: %w", sig, errno)
			}
		}
		if blk&(1<<(sig-1)) != 0 {
			set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
		}
	}
	runtime.LockOSThread()
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &set, nil); err != nil {
		return fmt.Errorf("blocking %s: %w", args[1], err)
	}
	return syscall.Exec(path, args[3:], os.Environ())
}

// sigList reads "-" or SIG[,SIG...], names or numbers, as a mask with bit N-1 for signal N.
func sigList(list string) (uint64, error) {
	var mask uint64
	if list == "-" {
		return 0, nil
	}
	for name := range strings.SplitSeq(list, ",") {
		sig := signalByName(name)
		if n, err := strconv.Atoi(name); err == nil {
			sig = syscall.Signal(n)
		}
		if sig < 1 || sig > signals.MaxSignal {
			return 0, fmt.Errorf("unknown signal %q", name)
		}
		mask |= 1 << (sig - 1)
	}
	return mask, nil
}

func serveUDP(args []string) error {
	fs := flag.NewFlagSet("serve-udp", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "TCP (HTTP) listen address")
	udpAddr := fs.String("udp", "0.0.0.0:5353", "UDP listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp", *udpAddr)
	if err != nil {
		return err
	}
	var received atomic.Int64
	serveOK(ln)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			received.Add(1)
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	say("ready app %d %s %s", os.Getpid(), ln.Addr(), pc.LocalAddr())
	s := <-ch
	say("got app %s", signame(s.(syscall.Signal)))
	say("udp received %d", received.Load())
	os.Exit(0)
	return nil
}

// serveOK answers every HTTP request on ln with "ok <pid>", in the background.
func serveOK(ln net.Listener) {
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "ok %d\n", os.Getpid()) }),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
}

// netnsExec execs PROG in a new network namespace with its loopback up. The namespace is the
// calling thread's, so the thread is locked from unshare to exec, which keeps it.
func netnsExec(args []string) error {
	if len(args) < 2 || args[0] != "--" {
		return errors.New("usage: _netns -- PROG [ARG...]")
	}
	path, err := exec.LookPath(args[1])
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
	}
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: SIOCSIFFLAGS: %w", err)
	}
	unix.Close(s)
	return syscall.Exec(path, args[1:], os.Environ())
}
