package main

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/pod"
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
)

// initSpec is one init under test. An empty path is the bare case: the app alone as PID 1.
type initSpec struct {
	col      *column
	path     string
	pre      []string // arguments before the app's command line
	forwards bool     // forwards signals and reaps orphans (mininit's plain modes do not)
}

// argv is the command line that runs app under the init.
func (s *initSpec) argv(app ...string) []string {
	if s.path == "" {
		return app
	}
	return append(append([]string{s.path}, s.pre...), app...)
}

// bench holds what every phase needs.
type bench struct {
	o        options
	method   pod.Method // how each PID namespace is made: pod.Fork (-ns unshare) or pod.Direct (-ns clone)
	devnull  int
	benchapp string
	env      []string
	bare     *initSpec
	inits    []*initSpec // the inits under test, reference ones included
	res      *results
}

// counts of repetitions: full and -quick.
type counts struct {
	startWarm, start, sigWarm, sig, reapWarm, reap int
	rss                                            int // launches of each init, RSS their median
	idle                                           time.Duration
}

func (b *bench) counts() counts {
	if b.o.quick {
		return counts{startWarm: 10, start: 100, sigWarm: 50, sig: 500, reapWarm: 0, reap: 2, rss: 1, idle: 300 * time.Millisecond}
	}
	return counts{startWarm: 30, start: 1000, sigWarm: 300, sig: 5000, reapWarm: 1, reap: 11, rss: 5, idle: time.Second}
}

func run(o options) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root: each init runs as PID 1 of a new PID namespace")
	}
	runtime.LockOSThread()
	// The benchmark's own garbage collector must not pause a measurement; it collects between
	// phases.
	debug.SetGCPercent(-1)

	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "benchrun-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	b := &bench{o: o, env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
	b.res = &results{date: time.Now(), ns: o.ns, quick: o.quick, orphans: o.orphans, goVersion: runtime.Version(), load0: loadavg()}
	b.method = pod.Fork
	if o.ns == "clone" {
		b.method = pod.Direct
	}
	if _, err := pod.Prepare(b.method, []string{"/bin/true"}); err != nil {
		return fmt.Errorf("%w; or use -ns clone", err)
	}
	b.devnull, err = unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/null: %w", err)
	}

	progress("building drainit, benchapp and mininit")
	drainitBin := o.drainit
	if drainitBin == "" {
		drainitBin = filepath.Join(tmp, "drainit")
		if err := goBuild(root, drainitBin, "./cmd/drainit"); err != nil {
			return err
		}
	} else if drainitBin, err = filepath.Abs(drainitBin); err != nil {
		return fmt.Errorf("-drainit: %w", err)
	}
	b.benchapp = filepath.Join(tmp, "benchapp")
	if err := goBuild(root, b.benchapp, "./bench/benchapp"); err != nil {
		return err
	}
	b.bare = &initSpec{col: &column{name: "bare", vals: map[string]float64{}}}
	b.add("drainit", drainitBin, []string{"--"}, false, true)
	// drainit linked the other way too (with or without its own ELF entry point), as a
	// reference: the entry point runs before the Go runtime, on every start.
	if o.entry {
		if err := b.otherEntry(root, tmp, drainitBin); err != nil {
			return err
		}
	}
	for _, name := range []string{"tini", "tini-static", "dumb-init", "catatonit"} {
		path, err := exec.LookPath(name)
		if err != nil {
			if name != "tini-static" {
				b.res.skipped = append(b.res.skipped, fmt.Sprintf("%s is not installed (apt-get install %s)", name, name))
			}
			continue
		}
		b.add(name, path, []string{"--"}, false, true)
	}
	if o.ref {
		mininit := filepath.Join(tmp, "mininit")
		if err := goBuild(root, mininit, "./bench/mininit"); err != nil {
			return err
		}
		b.add("mininit", mininit, []string{"--"}, true, false)
		b.add("mininit -early", mininit, []string{"-early", "--"}, true, false)
		b.add("mininit -notify", mininit, []string{"-notify", "--"}, true, false)
		b.add("mininit -forward", mininit, []string{"-forward", "--"}, true, true)
	}
	for _, e := range o.extra {
		name, cmd, _ := strings.Cut(e, "=")
		f := strings.Fields(cmd)
		path, err := filepath.Abs(f[0])
		if err != nil {
			return fmt.Errorf("-extra %s: %w", e, err)
		}
		b.add(name, path, append(f[1:], "--"), true, true)
	}
	b.describe()

	c := b.counts()
	b.res.startRounds, b.res.sigRounds, b.res.reapRounds, b.res.rssLaunches = c.start, c.sig, c.reap, c.rss
	for _, ph := range []struct {
		name string
		run  func(counts) error
	}{{"startup", b.startup}, {"exec", b.execs}, {"signals", b.signals}, {"reap", b.reaping}, {"control", b.control}} {
		if ph.name == "reap" {
			b.res.load1 = loadavg() // before the phase that raises it itself
		}
		if o.only[ph.name] || len(o.only) == 0 {
			if err := ph.run(c); err != nil {
				return err
			}
		}
	}

	md := b.res.markdown()
	fmt.Print(md)
	if o.out != "" && o.out != "-" {
		out := o.out
		if !filepath.IsAbs(out) {
			out = filepath.Join(root, out)
		}
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
		progress("wrote " + out)
	}
	return nil
}

func (b *bench) add(name, path string, pre []string, ref, forwards bool) {
	col := &column{name: name, ref: ref, vals: map[string]float64{}}
	b.res.cols = append(b.res.cols, col)
	b.inits = append(b.inits, &initSpec{col: col, path: path, pre: pre, forwards: forwards})
}

// note records something the reader of the results must know, and says it now too.
func (b *bench) note(s string) {
	if slices.Contains(b.res.notes, s) {
		return // the same failure in another launch of the same init
	}
	b.res.notes = append(b.res.notes, s)
	progress("note: " + s)
}

// loadavg is the 1-minute load average.
func loadavg() string {
	l, err := testenv.LoadAverage("/proc")
	if err != nil {
		return "unknown"
	}
	return l
}

func progress(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run the benchmark from inside the drainit module (go run ./bench)")
	}
	return filepath.Dir(mod), nil
}

// otherEntry finds out whether the drainit measured starts at its own ELF entry point (package
// startsig/entry; drainit says so in its debug log) and builds drainit the other way, as a
// reference column.
func (b *bench) otherEntry(root, tmp, drainitBin string) error {
	entry, err := hasEntryPoint(drainitBin)
	if err != nil {
		b.note(fmt.Sprintf("cannot tell how drainit was linked (%v); no entry-point variant.", err))
		return nil
	}
	name, tags := "drainit with entry point", ""
	b.res.entry = "without its entry point; `drainit with entry point` below has it"
	if entry {
		name, tags = "drainit without entry point", "noentrypoint"
		b.res.entry = "with its entry point; `drainit without entry point` below is built with `-tags noentrypoint`"
	}
	out := filepath.Join(tmp, "drainit-variant")
	if err := goBuild(root, out, "./cmd/drainit", "-tags="+tags); err != nil {
		return err
	}
	b.add(name, out, []string{"--"}, true, true)
	return nil
}

// hasEntryPoint runs `drainit -- /bin/true` at debug level and reads the "entry_point" field of
// the line in which drainit says whether its entry point ran.
func hasEntryPoint(drainitBin string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, drainitBin, "--log-format", "json", "--", "/bin/true")
	cmd.Env = append(os.Environ(), "DRAINIT_LOG_LEVEL=debug")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("%s -- /bin/true: %w: %s", drainitBin, err, out)
	}
	switch {
	case strings.Contains(string(out), `"entry_point":true`):
		return true, nil
	case strings.Contains(string(out), `"entry_point":false`):
		return false, nil
	}
	return false, errors.New(`no "entry_point" field in drainit's debug log`)
}

// goBuild builds a stripped static binary, with more flags for go build.
func goBuild(root, out, pkg string, flags ...string) error {
	cmd := exec.Command("go", append(append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}, flags...), pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return nil
}

// describe fills in what needs no measuring: the machine, each init's version, size and linkage.
func (b *bench) describe() {
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		b.res.kernel = unix.ByteSliceToString(u.Release[:])
	}
	b.res.cpus = runtime.NumCPU()
	b.res.cpu = "unknown CPU"
	if m, err := testenv.CPUModel("/proc"); err == nil {
		b.res.cpu = m
	}
	for _, s := range b.inits {
		if st, err := os.Stat(s.path); err == nil {
			s.col.vals["size"] = float64(st.Size())
		}
		if s.col.ref {
			continue
		}
		s.col.linkage = linkage(s.path)
		arg := "--version"
		if s.col.name == "drainit" {
			arg = "version"
		}
		s.col.version = version(s.path, arg)
	}
}

// linkage says "static" or "dynamic, needs LIBS" from the ELF headers.
func linkage(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			libs, _ := f.ImportedLibraries()
			return "dynamic: " + strings.Join(libs, ", ")
		}
	}
	return "static"
}

func version(path, arg string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, arg).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// launch starts argv as PID 1 of a new PID namespace with files as its fds 0, 1, 2, ... It
// returns the pid to wait for (unshare's, or the init's itself with -ns clone). It forks and
// execs with syscall.ForkExec, not os/exec, so that the timed path holds nothing else.
func (b *bench) launch(argv []string, files []uintptr) (int, error) {
	l, err := pod.Prepare(b.method, argv)
	if err != nil {
		return 0, err
	}
	return syscall.ForkExec(l.Argv[0], l.Argv, &syscall.ProcAttr{Env: b.env, Files: files, Sys: l.Sys})
}

// initPid is the host pid of PID 1 in the namespace launch made.
func (b *bench) initPid(launched int) (int, error) {
	return pod.PID1(b.method, launched, nil, 5*time.Second)
}

// wait reaps pid and returns its status; EINTR is retried.
func wait(pid int) (unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err != unix.EINTR {
			return ws, err
		}
	}
}

// stop kills a namespace through its PID 1 and reaps what launch started.
func stop(launched, init int) {
	if init > 0 {
		_ = unix.Kill(init, unix.SIGKILL)
	}
	_ = unix.Kill(launched, unix.SIGKILL)
	_, _ = wait(launched)
}

// children lists pid's children, zombies included, from each thread's list: cheap enough to
// poll while thousands of orphans exit.
func children(pid int) []int { return proc.Children("/proc", pid) }

// statusKB reads a "Key:   N kB" field of /proc/PID/status, in bytes.
func statusKB(pid int, key string) (float64, bool) {
	v, err := proc.StatusField("/proc", pid, key)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseFloat(f[0], 64)
	return n * 1024, err == nil
}

// pipe returns a pipe whose ends are both close-on-exec: an end reaches a child only when it is
// listed in the child's Files.
func pipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return 0, 0, fmt.Errorf("pipe: %w", err)
	}
	return p[0], p[1], nil
}

// readByte waits up to timeout for one byte on fd.
func readByte(fd int, timeout time.Duration) (byte, error) {
	var buf [1]byte
	err := readFull(fd, buf[:], timeout)
	return buf[0], err
}

// readFull waits up to timeout (for each read) until buf is full.
func readFull(fd int, buf []byte, timeout time.Duration) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for len(buf) > 0 {
		n, err := unix.Poll(fds, int(timeout.Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("nothing within %v", timeout)
		}
		n, err = unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			return errors.New("closed: the app has gone")
		}
		buf = buf[n:]
	}
	return nil
}

// monotonic is CLOCK_MONOTONIC, the clock benchapp stamp reports.
func monotonic() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// startup times `INIT -- /bin/true` against `/bin/true` alone, both as PID 1.
func (b *bench) startup(c counts) error {
	specs := append([]*initSpec{b.bare}, b.inits...)
	samples := make([][]time.Duration, len(specs))
	for i := range samples {
		samples[i] = make([]time.Duration, 0, c.start)
	}
	failed := make([]bool, len(specs))
	files := []uintptr{uintptr(b.devnull), uintptr(b.devnull), uintptr(b.devnull)}
	progress(fmt.Sprintf("start-up: %d rounds of %d", c.start, len(specs)))
	runtime.GC()
	for round := -c.startWarm; round < c.start; round++ {
		for _, i := range rand.Perm(len(specs)) {
			if failed[i] {
				continue
			}
			argv := specs[i].argv("/bin/true")
			t0 := time.Now()
			pid, err := b.launch(argv, files)
			if err != nil {
				return fmt.Errorf("start %s: %w", specs[i].col.name, err)
			}
			ws, err := wait(pid)
			d := time.Since(t0)
			if err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
				failed[i] = true
				b.note(fmt.Sprintf("%s: `%s` failed (status %v, %v); no start-up figure.",
					specs[i].col.name, strings.Join(argv, " "), ws, err))
				continue
			}
			if round >= 0 {
				samples[i] = append(samples[i], d)
			}
		}
	}
	if failed[0] {
		return errors.New("/bin/true alone as PID 1 failed: nothing to compare with")
	}
	b.res.bareStart50 = percentile(samples[0], 50).Seconds()
	b.res.bareStart90 = percentile(samples[0], 90).Seconds()
	for i, s := range specs[1:] {
		if failed[i+1] {
			continue
		}
		s.col.vals["start50"] = percentile(samples[i+1], 50).Seconds() - b.res.bareStart50
		s.col.vals["start90"] = percentile(samples[i+1], 90).Seconds() - b.res.bareStart90
	}
	return nil
}

// execs splits start-up in two: from launching the init to the app running (benchapp stamp),
// and from there to the namespace's end (the app's exit, the init's reaction and exit). Each is
// reported over the same with the app alone as PID 1.
func (b *bench) execs(c counts) error {
	specs := append([]*initSpec{b.bare}, b.inits...)
	toApp := make([][]time.Duration, len(specs))
	after := make([][]time.Duration, len(specs))
	failed := make([]bool, len(specs))
	progress(fmt.Sprintf("start-up split: %d rounds of %d", c.start/2, len(specs)))
	runtime.GC()
	for round := -c.startWarm; round < c.start/2; round++ {
		for _, i := range rand.Perm(len(specs)) {
			if failed[i] {
				continue
			}
			a, z, err := b.execOnce(specs[i])
			if err != nil {
				failed[i] = true
				b.note(fmt.Sprintf("%s: start-up split failed (%v).", specs[i].col.name, err))
				continue
			}
			if round >= 0 {
				toApp[i] = append(toApp[i], a)
				after[i] = append(after[i], z)
			}
		}
	}
	if failed[0] {
		return errors.New("benchapp stamp alone as PID 1 failed: nothing to compare with")
	}
	bareApp, bareAfter := percentile(toApp[0], 50).Seconds(), percentile(after[0], 50).Seconds()
	for i, s := range specs[1:] {
		if !failed[i+1] {
			s.col.vals["toapp50"] = percentile(toApp[i+1], 50).Seconds() - bareApp
			s.col.vals["after50"] = percentile(after[i+1], 50).Seconds() - bareAfter
		}
	}
	return nil
}

func (b *bench) execOnce(s *initSpec) (toApp, after time.Duration, err error) {
	r, w, err := pipe()
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(r)
	t0 := monotonic()
	pid, err := b.launch(s.argv(b.benchapp, "stamp"), []uintptr{uintptr(b.devnull), uintptr(b.devnull), uintptr(b.devnull), uintptr(w)})
	unix.Close(w)
	if err != nil {
		return 0, 0, fmt.Errorf("start: %w", err)
	}
	var buf [8]byte
	rerr := readFull(r, buf[:], 5*time.Second)
	ws, err := wait(pid)
	t1 := monotonic()
	if rerr != nil {
		return 0, 0, fmt.Errorf("no stamp from the app: %w", rerr)
	}
	if err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		return 0, 0, fmt.Errorf("status %v, %v", ws, err)
	}
	ta := time.Duration(binary.LittleEndian.Uint64(buf[:]))
	return ta - t0, t1 - ta, nil
}

// echoer is one init running benchapp echo, for the RSS and signal measurements.
type echoer struct {
	spec     *initSpec
	launched int
	init     int // where the signal is sent: the init's host pid (the app's, bare)
	r        int // the app's answers
	samples  []time.Duration
	failed   bool
}

// signals measures idle RSS and SIGUSR1 forwarding latency, all inits running at once. RSS is
// the median over c.rss launches of every init: one launch's figure moves by ±60 KiB from one
// start to the next (how the Go runtime's first allocations fall on spans and threads), more
// than the gap between a pass and a miss of a target; the last launch's apps then answer the
// signals.
func (b *bench) signals(c counts) error {
	specs := append([]*initSpec{b.bare}, b.inits...)
	var es []*echoer
	defer func() { stopEchoers(es) }()
	rss := map[*initSpec]map[string][]float64{}
	for round := range c.rss {
		var err error
		if es, err = b.launchEchoers(specs, c.sig); err != nil {
			return err
		}
		progress(fmt.Sprintf("idle RSS, launch %d of %d: apps up, waiting %v", round+1, c.rss, c.idle))
		time.Sleep(c.idle) // let start-up work (the runtime's, the allocator's) settle before reading RSS
		for _, e := range es[1:] {
			if e.failed {
				continue
			}
			if rss[e.spec] == nil {
				rss[e.spec] = map[string][]float64{}
			}
			for key, field := range map[string]string{"rss": "VmRSS", "rssanon": "RssAnon", "rssfile": "RssFile"} {
				if v, ok := statusKB(e.init, field); ok {
					rss[e.spec][key] = append(rss[e.spec][key], v)
				}
			}
		}
		if round < c.rss-1 {
			stopEchoers(es)
			es = nil
		}
	}
	for spec, vals := range rss {
		for key, v := range vals {
			spec.col.vals[key] = percentile(v, 50)
		}
	}

	progress(fmt.Sprintf("SIGUSR1 latency: %d rounds of %d", c.sig, len(es)))
	runtime.GC()
	for round := -c.sigWarm; round < c.sig; round++ {
		for _, i := range rand.Perm(len(es)) {
			e := es[i]
			if e.failed || (e.spec != b.bare && !e.spec.forwards) {
				continue
			}
			t0 := time.Now()
			err := unix.Kill(e.init, unix.SIGUSR1)
			if err == nil {
				_, err = readByte(e.r, 2*time.Second)
			}
			d := time.Since(t0)
			if err != nil {
				e.failed = true
				b.note(fmt.Sprintf("%s: SIGUSR1 did not reach the app (%v); no signal figure.", e.spec.col.name, err))
				continue
			}
			if round >= 0 {
				e.samples = append(e.samples, d)
			}
		}
	}
	for _, e := range es {
		if e.failed || len(e.samples) == 0 {
			continue
		}
		p50, p99 := percentile(e.samples, 50).Seconds(), percentile(e.samples, 99).Seconds()
		if e.spec == b.bare {
			b.res.direct50, b.res.direct99 = p50, p99
			continue
		}
		e.spec.col.vals["sig50"], e.spec.col.vals["sig99"] = p50, p99
	}
	return nil
}

// launchEchoers starts each init of specs with benchapp echo (specs[0], b.bare, runs the app
// alone) and waits for the app to answer; one that does not is marked failed, and noted.
func (b *bench) launchEchoers(specs []*initSpec, sig int) ([]*echoer, error) {
	var es []*echoer
	for _, s := range specs {
		r, w, err := pipe()
		if err != nil {
			stopEchoers(es)
			return nil, err
		}
		argv := s.argv(b.benchapp, "echo")
		pid, err := b.launch(argv, []uintptr{uintptr(b.devnull), uintptr(b.devnull), uintptr(b.devnull), uintptr(w)})
		unix.Close(w)
		if err != nil {
			unix.Close(r)
			stopEchoers(es)
			return nil, fmt.Errorf("start %s: %w", s.col.name, err)
		}
		e := &echoer{spec: s, launched: pid, r: r, samples: make([]time.Duration, 0, sig)}
		es = append(es, e)
		if e.init, err = b.initPid(pid); err == nil {
			_, err = readByte(r, 10*time.Second)
		}
		if err != nil {
			e.failed = true
			b.note(fmt.Sprintf("%s: `%s` did not start the app (%v); no RSS or signal figure.",
				s.col.name, strings.Join(argv, " "), err))
		}
	}
	return es, nil
}

// stopEchoers kills what launchEchoers started.
func stopEchoers(es []*echoer) {
	for _, e := range es {
		stop(e.launched, e.init)
		unix.Close(e.r)
	}
}

// reaping times how long each init takes to reap b.o.orphans orphans released at once.
func (b *bench) reaping(c counts) error {
	var specs []*initSpec
	for _, s := range b.inits {
		if s.forwards {
			specs = append(specs, s)
		}
	}
	times := make([][]time.Duration, len(specs))
	cpus := make([][]time.Duration, len(specs))
	failed := make([]bool, len(specs))
	progress(fmt.Sprintf("reaping: %d rounds of %d, %d orphans each", c.reap, len(specs), b.o.orphans))
	for round := -c.reapWarm; round < c.reap; round++ {
		for _, i := range rand.Perm(len(specs)) {
			if failed[i] {
				continue
			}
			runtime.GC()
			d, cpu, err := b.reapOnce(specs[i])
			if err != nil {
				failed[i] = true
				b.note(fmt.Sprintf("%s: reaping round failed (%v); no reaping figure.", specs[i].col.name, err))
				continue
			}
			if round >= 0 {
				times[i] = append(times[i], d)
				cpus[i] = append(cpus[i], cpu)
			}
		}
	}
	for i, s := range specs {
		if failed[i] || len(times[i]) == 0 {
			continue
		}
		s.col.vals["reap"] = percentile(times[i], 50).Seconds()
		s.col.vals["reapmin"] = slices.Min(times[i]).Seconds()
		s.col.vals["reapmax"] = slices.Max(times[i]).Seconds()
		s.col.vals["reapcpu"] = percentile(cpus[i], 50).Seconds()
	}
	return nil
}

func (b *bench) reapOnce(s *initSpec) (elapsed, cpu time.Duration, err error) {
	ready, readyW, err := pipe()
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(ready)
	rel, relW, err := pipe()
	if err != nil {
		unix.Close(readyW)
		return 0, 0, err
	}
	closeRel := func() {
		if relW >= 0 {
			unix.Close(relW)
			relW = -1
		}
	}
	defer closeRel()
	n := b.o.orphans
	pid, err := b.launch(s.argv(b.benchapp, "orphans", strconv.Itoa(n)),
		[]uintptr{uintptr(b.devnull), uintptr(b.devnull), uintptr(b.devnull), uintptr(readyW), uintptr(rel)})
	unix.Close(readyW)
	unix.Close(rel)
	if err != nil {
		return 0, 0, fmt.Errorf("start: %w", err)
	}
	init := 0
	defer func() { stop(pid, init) }()
	if init, err = b.initPid(pid); err != nil {
		return 0, 0, err
	}
	if _, err := readByte(ready, 60*time.Second); err != nil {
		return 0, 0, fmt.Errorf("the app did not make its orphans: %w", err)
	}
	// The orphans' parent has been reaped by the app, so they already belong to the init.
	if k := len(children(init)); k != n+1 {
		return 0, 0, fmt.Errorf("the init has %d children, want the app and %d orphans", k, n)
	}
	time.Sleep(50 * time.Millisecond) // let the machine calm down after 2000 clones
	cpu0 := testenv.CPUTime("/proc", init)
	t0 := time.Now()
	closeRel()
	deadline := t0.Add(30 * time.Second)
	for {
		if len(children(init)) <= 1 {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%d children left after 30s", len(children(init))-1)
		}
		// Each poll reads every thread's children list under the kernel's tasklist lock,
		// which the exits and the reaping need too: poll gently.
		time.Sleep(500 * time.Microsecond)
	}
	elapsed = time.Since(t0)
	return elapsed, testenv.CPUTime("/proc", init) - cpu0, nil
}
