package supervisor

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
)

// TestMain lets the test binary double as the helper programs of the process tests:
// `<test binary> supervisor-helper MODE`.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "supervisor-helper" {
		os.Exit(helper(os.Args[2]))
	}
	os.Exit(m.Run())
}

// helper modes:
//
//	stranger-parent  start a stranger in a session of its own, then exit at once, so that the
//	                 stranger is no descendant of the test
//	stranger         print "ready <pid>", then "got <signal number>" for each of HUP, USR1 and
//	                 TERM; print "bye" and exit on WINCH (or exit 1 after a minute)
func helper(mode string) int {
	switch mode {
	case "stranger-parent":
		c := exec.Command(os.Args[0], "supervisor-helper", "stranger")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "stranger":
		c := make(chan os.Signal, 8)
		signal.Notify(c, unix.SIGHUP, unix.SIGUSR1, unix.SIGTERM, unix.SIGWINCH)
		fmt.Printf("ready %d\n", os.Getpid())
		for {
			select {
			case s := <-c:
				if s == unix.SIGWINCH {
					fmt.Println("bye")
					return 0
				}
				fmt.Printf("got %d\n", s.(unix.Signal))
			case <-time.After(time.Minute):
				return 1
			}
		}
	}
	return 2
}

// TestSignalsSpareReapedAppsPid: once the app has been reaped, its pid, and its group's id once
// the group is empty, can be given to any process on the machine (drainit as a subreaper shares
// the numbers with it). Here a stranger leads a group with that id: it is no descendant of
// drainit (the test), and must get none of the signals drainit sends the app's group, the app
// alone, or everything. The old code reached it with kill(-pgid) and kill(pid).
func TestSignalsSpareReapedAppsPid(t *testing.T) {
	// A pipe of the test's own: Wait closes the one StdoutPipe makes once the parent has exited,
	// while the stranger still writes to it.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	parent := exec.Command(os.Args[0], "supervisor-helper", "stranger-parent")
	parent.Stdout, parent.Stderr = w, os.Stderr
	err = parent.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stranger's output ended")
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("the stranger said nothing for 10 s")
		}
		return ""
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(next(), "ready "))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) })
	if err := parent.Wait(); err != nil {
		t.Fatalf("stranger-parent: %v", err)
	}
	if pgid, err := unix.Getpgid(pid); err != nil || pgid != pid {
		t.Fatalf("the stranger's group is %d (%v), want its own, %d", pgid, err, pid)
	}

	// drainit as a subreaper whose app had the stranger's pid and has been reaped.
	cfg := &config.Config{Forward: config.ForwardGroup}
	s := newWith(cfg, Options{}, zerolog.Nop(), nil, nil, linuxProcesses{pid1: false}, false)
	s.appPid, s.appReaped = pid, true
	s.send(toApp, unix.SIGUSR1)
	s.send(toEverything, unix.SIGTERM)
	cfg.Forward = config.ForwardChild
	s.send(toApp, unix.SIGHUP)

	// WINCH last: the kernel hands a process its pending signals lowest number first, so any
	// of the three above that reached the stranger is printed before WINCH ends it.
	if err := unix.Kill(pid, unix.SIGWINCH); err != nil {
		t.Fatalf("the stranger is gone already: %v", err)
	}
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stranger ended without saying bye")
			}
			if l == "bye" {
				return
			}
			t.Errorf("the stranger (not drainit's, with the reaped app's pid) %s", l)
		case <-time.After(10 * time.Second):
			t.Fatal("the stranger did not end on SIGWINCH within 10 s")
		}
	}
}

// survivor says what keeps a process alive or uncollected after SIGKILL, most specific first.
func TestSurvivor(t *testing.T) {
	for _, c := range []struct {
		state          byte
		tracer, parent int
		denied         bool
		want           string
	}{
		{'S', 0, 0, true, "pid 7: not permitted to signal it"},
		{'Z', 40, 0, false, "pid 7: has exited, but its tracer (pid 40) has not collected its exit"},
		{'t', 40, 0, false, "pid 7: traced by pid 40 (state t)"},
		{'Z', 0, 9, false, "pid 7: has exited, but its parent (pid 9) has not collected its exit"},
		{'Z', 0, 0, false, "pid 7: has exited, but its exit has not come to drainit"},
		{'D', 0, 0, false, "pid 7: in uninterruptible sleep (D)"},
		{'R', 0, 0, false, "pid 7: state R"},
	} {
		if got := survivor(7, c.state, c.tracer, c.parent, c.denied); !strings.HasPrefix(got, c.want) {
			t.Errorf("survivor(7, %c, %d, %d, %v) = %q, want it to begin %q", c.state, c.tracer, c.parent, c.denied, got, c.want)
		}
	}
}

// TestSignalEachOnce: as a subreaper, signalling everything is a scan of drainit's descendants
// and a signal to each, in rounds, for the children forked between a scan and its signals. Each
// process gets the signal once, as kill(-1) gives it once to each as PID 1: leftovers that handle
// SIGTERM (processes left by an app that exited, in a pod that shares its PID namespace, where
// drainit is not PID 1) got the cleanup's SIGTERM two or three times, and to many apps a second
// SIGTERM is a forced stop (Go's signal.NotifyContext once stopped: the default action, death).
func TestSignalEachOnce(t *testing.T) {
	scans := [][]int{{10, 11}, {10, 11, 12}, {10, 11, 12}, {10, 11, 12}} // 12 forked after the first scan
	got := map[int]int{}
	signalEach(unix.SIGTERM, func() []int {
		ds := scans[0]
		if len(scans) > 1 {
			scans = scans[1:]
		}
		return ds
	}, func(pid int, sig unix.Signal) error {
		if sig != unix.SIGTERM {
			t.Errorf("pid %d got %v, want SIGTERM", pid, sig)
		}
		got[pid]++
		return nil
	})
	if want := map[int]int{10: 1, 11: 1, 12: 1}; !maps.Equal(got, want) {
		t.Errorf("signals per pid: %v, want %v", got, want)
	}
}

// workers counts a pre-fork master's workers, and nothing that merely looks like one: children
// that run another program, or leave the signal at its default, or a master that leaves it at
// its default (its workers then stop on the group-wide signal alone). Shell scripts, since a Go
// program's runtime catches every signal. The master prints "up" for each child started.
func TestWorkers(t *testing.T) {
	const (
		catch  = `trap "exit 0" TERM; `
		loop   = `while :; do sleep 1; done`
		worker = `sh -c '` + catch + `echo up; ` + loop + `' & `
		idle   = `sh -c 'echo up; ` + loop + `' & `
		other  = `awk 'BEGIN { print "up"; fflush(); system("sleep 60") }' & ` // up once awk runs
	)
	for i, c := range []struct {
		master, child string
		want          int
	}{{catch, worker, 3}, {catch, idle, 0}, {catch, other, 0}, {"", worker, 0}} {
		script := c.master + strings.Repeat(c.child, 3) + "wait"
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			countWorkers(t, script, c.want)
		})
	}
}

// countWorkers runs script as the app and wants workers to find none among its children at
// once, and want of them once they are workerAge old. The script writes "up" for each of 3.
func countWorkers(t *testing.T, script string, want int) {
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as the app is started
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Wait()
	})
	r := bufio.NewReader(out)
	for range 3 {
		if line, err := r.ReadString('\n'); line != "up\n" {
			t.Fatalf("%s: said %q (%v), not up", script, line, err)
		}
	}
	// The children print "up" once their trap is set (a shell sets it before running what
	// follows it). Younger than workerAge, none counts yet.
	if got := (linuxProcesses{}).workers(cmd.Process.Pid, unix.SIGTERM); got != 0 {
		t.Errorf("%s: %d workers just forked, want 0", script, got)
	}
	// What is awaited is the age itself (and a tick of /proc's start times, 10 ms, more).
	<-time.After(workerAge + 20*time.Millisecond)
	if got := (linuxProcesses{}).workers(cmd.Process.Pid, unix.SIGTERM); got != want {
		t.Errorf("%s: %d workers, want %d", script, got, want)
	}
}
