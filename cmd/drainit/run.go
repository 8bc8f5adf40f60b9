//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/logline"
	"github.com/drainit/drainit/internal/proc"
	"github.com/drainit/drainit/internal/startsig"
	"github.com/drainit/drainit/signals"
	"github.com/drainit/drainit/signals/early"
	"github.com/drainit/drainit/supervisor"
)

// runCmd is the default subcommand: run the app under the supervisor. --help goes to stdout;
// mistakes and the log go to stderr.
func runCmd(args []string, stdout io.Writer, stderr *os.File) int {
	// One P, as the start pinned to one CPU gives (package startsig): a GOMAXPROCS in the
	// environment is the app's, and each P costs drainit memory and threads (docs/design.md).
	procsAtStart := runtime.GOMAXPROCS(0)
	if procsAtStart > 1 {
		runtime.GOMAXPROCS(1)
	}
	// Registered before main (package early), the rest of them meanwhile: every signal that
	// matters waits from its registration on and reaches the app once it runs.
	reg := early.Take()
	if reg.Err != nil {
		fmt.Fprintf(stderr, "drainit: %v\n", reg.Err)
	}
	env := environ()
	cfg, err := config.Parse(args, env, stdout)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "drainit: %v\n", err)
		return 2
	}
	// Before anything is opened (the control server's port, which the outer drainit may hold)
	// or started.
	outer, stale := outerDrainit(env)
	if outer > 0 {
		fmt.Fprintf(stderr, "drainit: started under drainit PID %d, which already runs a stop sequence: two would drain twice and "+
			"outlive the grace period; keep one (the runtime's --init, or drainit in the image's ENTRYPOINT), or unset %s if this nesting is meant\n",
			outer, config.SupervisorEnv)
		return 2
	}
	log, logq := newLogger(stderr, cfg.LogFormat, cfg.LogLevel, isTerminal(stderr) && !levelGiven(args, env))
	// The lines still queued as drainit exits, the summary last (flushDeadline).
	var exitBy time.Time
	defer func() { logq.Flush(flushDeadline(time.Now(), exitBy)) }()
	opts, err := buildOptions(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "drainit: %v\n", err)
		return 2
	}
	if stale != nil {
		log.Debug().Err(stale).Msg(config.SupervisorEnv + " names no drainit above this one: ignored")
	}
	// Here, not just before the app starts: its /proc reads then run while the early signals'
	// registration does, which the next line waits for.
	defer markEnvironment(log)()
	// Every early signal registered before the app starts, the registration having run
	// alongside everything above.
	reg.Wait()
	// A trigger that is not early (--triggers PWR) too: a stop request must not be dropped.
	reg.Register(cfg.Triggers)
	// The start ran on one CPU (package startsig); the app, and drainit's threads from here
	// on, get the affinity drainit was started with.
	if err := startsig.Unpin(); err != nil {
		log.Error().Err(err).Msg("the app starts on one CPU only")
	}
	// The rarely sent rest, the OOM kill count's baseline and the spare threads first, once the
	// app has run for lateSignalsAfter: see there.
	var late *time.Timer
	oom := proc.NewOOMWatch("/")
	opts.OOMKills = oom.Since
	opts.Started = func() {
		late = time.AfterFunc(lateSignalsAfter, func() {
			oom.Mark()
			reserveThreads(log, oom.Cgroup())
			// One Notify call at a time, so that a signal that arrives meanwhile (a SIGTERM,
			// the app's SIGCHLD) waits for one registration, not for all of them.
			for _, s := range reg.Late() {
				signal.Notify(reg.Sigs, s)
			}
		})
	}
	// An app that is gone within lateSignalsAfter leaves nothing to register them for (and a
	// test that runs this function again would find them registered to a channel no one reads).
	defer func() {
		if late != nil {
			late.Stop()
		}
	}()
	for _, w := range cfg.Warnings() {
		log.Warn().Msg(w)
	}
	logIgnored(log, cfg, reg.Ignored, reg.Lost, reg.AllSeen)
	logBlocked(log, cfg, startsig.StartBlocked())
	log.Debug().Int("gomaxprocs", runtime.GOMAXPROCS(0)).Int("gomaxprocs_at_start", procsAtStart).Msg("drainit's Go code runs on one P")
	sup := supervisor.New(cfg, opts, log, reg.Sigs, reg.Chld)
	code, err := sup.Run(context.Background())
	exitBy = sup.ExitBy()
	if err != nil {
		// drainit's first argument that is no subcommand is the app: a misspelt subcommand
		// ("drainit chekc") is an app not found.
		if se, ok := errors.AsType[*supervisor.StartError](err); ok && se.Code == 127 && len(args) > 0 && args[0] == se.Command {
			if sub := config.SubcommandNear(se.Command); sub != "" {
				err = fmt.Errorf("%w (drainit %s?)", err, sub)
			}
		}
		log.Error().Err(err).Int("status", code).Msg("app not started")
	}
	return code
}

// lateSignalsAfter is how long after the app's start drainit registers the rarely sent signals
// (signals.Late; the triggers among them were registered before the app); until then the Go
// runtime drops them. Registered earlier, their ~2 ms of Notify calls competed with the app's
// start and held back its SIGCHLD (bench/STARTUP.md, issue 16's second pass).
const lateSignalsAfter = 100 * time.Millisecond

// spareThreads is how many threads drainit has the Go runtime hold for it (spare.go). On
// its one P drainit has 7 threads once the app runs, 11-15 with these (10 runs). The abort they
// guard against was measured with 10 in all (on two Ps, with 4 spares: docs/exit-and-logs.md);
// on one P, 4 made 9-11, and 9 once in CI.
const spareThreads = 5

// reserveThreads has the Go runtime start the spare threads where drainit sees a pids limit, and
// it leaves room for them: a thread the runtime cannot create aborts drainit, at once rather than
// maybe later. Not where drainit sees none: the threads cost memory, which only a limit pays
// back; not on the start path, which they slowed (docs/exit-and-logs.md, "When the container
// runs out", has the figures).
func reserveThreads(log zerolog.Logger, g proc.Cgroup) {
	cur, limit, ok := g.Pids()
	if !ok {
		return
	}
	if limit-cur < 2*spareThreads {
		log.Warn().Int("pids", cur).Int("pids_max", limit).
			Msg("the container's pids limit is all but reached: drainit takes no spare threads, and if the Go runtime wants one it cannot create, it aborts drainit (and the container with it)")
		return
	}
	startSpareThreads(spareThreads)
}

// logIgnored says which signals drainit keeps ignored for the app, and warns when that defeats
// the stop signal: the app would never see it and be killed at the kill point. One ignored trigger
// is no warning (a script's background job has INT ignored, and TERM still triggers); all of them
// ignored is, since then no signal starts the stop sequence. allSeen is false without drainit's
// entry point (early.InheritedIgnored).
func logIgnored(log zerolog.Logger, cfg *config.Config, ignored, lost []unix.Signal, allSeen bool) {
	if allSeen {
		log.Debug().Bool("entry_point", true).Msg("ignored signals read at drainit's entry point: every one it can keep is kept")
	} else {
		// Not silent: such a binary differs where no test of the user's would show it.
		log.Warn().Bool("entry_point", false).
			Msg("drainit runs without its entry point (built with -tags noentrypoint, or for an architecture it is not written for): a stop signal in its first milliseconds can be lost, " +
				"and of the signals ignored or blocked when it started some reach the app at their default (docs/design.md)")
	}
	if len(lost) > 0 {
		// Info, not a warning: a make(1) recipe starts its commands with 33 ignored.
		log.Info().Strs("signals", signalNames(lost)).
			Msg("signals ignored when drainit started that the app gets at their default action: drainit cannot keep them ignored (docs/design.md)")
	}
	if len(ignored) == 0 {
		return
	}
	log.Info().Strs("signals", signalNames(ignored)).Msg("signals ignored when drainit started stay ignored for the app and are not forwarded")
	if slices.Contains(ignored, cfg.StopSignal) {
		log.Warn().Str("signal", signals.Name(cfg.StopSignal)).
			Msg("the stop signal was ignored when drainit started and stays ignored for the app: it will only be killed, --kill-margin before the deadline")
	}
	if len(cfg.Triggers) > 0 && !slices.ContainsFunc(cfg.Triggers, func(s unix.Signal) bool { return !slices.Contains(ignored, s) }) {
		log.Warn().Msg("every trigger signal was ignored when drainit started: no signal starts the stop sequence, only a /prestop request")
	}
}

// logBlocked says which signals the app starts with blocked, as drainit started with them (the
// exec hooks start with none), and warns when one of them is a signal drainit stops the app
// with: the app would get it only if it unblocks it itself (a shell does; sleep does not), and
// would otherwise be killed at the kill point.
func logBlocked(log zerolog.Logger, cfg *config.Config, blocked []unix.Signal) {
	if len(blocked) == 0 {
		return
	}
	log.Info().Strs("signals", signalNames(blocked)).Msg("signals blocked when drainit started stay blocked for the app (not for the exec hooks)")
	stops := cfg.Triggers
	if cfg.StopSignal != 0 {
		stops = []unix.Signal{cfg.StopSignal}
	}
	for _, s := range stops {
		if slices.Contains(blocked, s) {
			log.Warn().Str("signal", signals.Name(s)).
				Msg("a stop signal was blocked when drainit started and stays blocked for the app: unless the app unblocks it, it will only be killed, --kill-margin before the deadline")
		}
	}
}

// signalNames names each of sigs.
func signalNames(sigs []unix.Signal) []string {
	names := make([]string, len(sigs))
	for i, s := range sigs {
		names[i] = signals.Name(s)
	}
	return names
}

// environ returns drainit's own variables (DRAINIT_…) of the environment as a map, for
// config.Parse and the nesting check. Only those: a pod's environment can hold hundreds of
// Service variables, and a map of them all stayed in an idle drainit's memory (bench/STARTUP.md,
// "Idle memory, third pass").
func environ() map[string]string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			continue
		}
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// logQueueMax is how much of the log drainit holds while its reader does not keep up, beyond
// what the pipe holds. A hook's output takes logQueueRelayed of it at most, so that a chatty
// hook behind a slow reader never crowds out the stop sequence's own lines (logline.Writer). It
// costs memory only while the reader is behind.
const (
	logQueueMax     = 128 << 10
	logQueueRelayed = 32 << 10
)

// logFlushWait is how long drainit's exit waits at most for the log's reader to take the lines
// still queued when no stop sequence ran: the app exited on its own, and a reader that has
// stopped reading must not keep drainit, and the app's status with it, from the runtime.
const logFlushWait = time.Second

// flushDeadline is when the exit stops waiting for the log: exitBy, the stop sequence's
// (Supervisor.ExitBy), however far off, or, with none (zero), logFlushWait from now. Up to
// exitBy drainit is expected to be running anyway, and a slow reader (10 KiB/s, the app's
// writes beside drainit's) takes seconds to get to the summary: waiting 1 s at most, drainit
// exited with it still queued.
func flushDeadline(now, exitBy time.Time) time.Time {
	if !exitBy.IsZero() {
		return exitBy
	}
	return now.Add(logFlushWait)
}

// newLogger builds the zerolog logger: JSON lines, or console format when asked for or, by
// default, when w is a terminal. quiet holds back info and debug lines until a stop sequence
// starts (see quietWriter). Every line is cut to one write of at most PIPE_BUF bytes
// (lineWriter) and goes through the returned queue, which never makes the logging goroutine wait
// for w's reader; flush it before exiting.
func newLogger(w *os.File, format, level string, quiet bool) (zerolog.Logger, *logline.Writer) {
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	// UTC: a local time zone would load /etc/localtime on the first log line (~0.1 ms of every
	// start), and logs are compared across machines anyway.
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
	zerolog.DurationFieldUnit = time.Millisecond
	zerolog.DurationFieldInteger = true
	// zerolog reports a failed write on os.Stderr itself, fd 2, which the runtime would end drainit
	// for (see logOutput); and where the log cannot be written there is no one to tell.
	zerolog.ErrorHandler = func(error) {}
	lw := &lineWriter{}
	if format == "console" || (format == "" && isTerminal(w)) {
		lw.console = &zerolog.ConsoleWriter{TimeFormat: "15:04:05.000", FormatPrepare: escapeMessage, FormatFieldValue: escapeList}
	}
	lw.q = logline.NewWriter(func() logline.Output { return logOutput(w) }, logQueueMax, logQueueRelayed, lw.notice)
	var out io.Writer = lw
	if quiet {
		out = &quietWriter{out: out}
	}
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Str("logger", "drainit").Logger(), lw.q
}

// logOutput is where the log's lines go: w, through a file of drainit's own (close-on-exec).
// The Go runtime ends a program whose write to fd 1 or 2 fails with EPIPE; drainit must outlive
// its log's reader, and on another descriptor only that line is lost. (Notifying SIGPIPE would do
// too, at the cost of one more registration on the start path.) A pipe or a terminal is opened
// again in non-blocking mode (reopen), a socket is sent to without waiting, anything else is
// written in blocking mode (docs/exit-and-logs.md, "When the container runs out").
func logOutput(w *os.File) logline.Output {
	var st unix.Stat_t
	if unix.Fstat(int(w.Fd()), &st) == nil && (st.Mode&unix.S_IFMT == unix.S_IFIFO || isTerminal(w)) {
		if f := reopen(w, &st); f != nil {
			if rc, err := f.SyscallConn(); err == nil {
				return logline.Output{Try: func(p []byte) (n int, err error) {
					if cerr := rc.Write(func(fd uintptr) bool { n, err = unix.Write(int(fd), p); return true }); cerr != nil {
						return 0, cerr
					}
					return max(n, 0), err
				}, Wait: f}
			}
		}
	}
	// Written at once, as before there was a queue: nothing is queued, no timer waits for it.
	fd, err := unix.FcntlInt(w.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return logline.Output{Try: w.Write, Wait: w}
	}
	f := os.NewFile(uintptr(fd), w.Name())
	if st.Mode&unix.S_IFMT == unix.S_IFSOCK {
		// A socket cannot be opened again, but each send can say not to wait (MSG_DONTWAIT),
		// which leaves the description the app shares as it is. A blocking write here stopped
		// the stop sequence behind a journal stream nobody read.
		return logline.Output{Try: func(p []byte) (int, error) {
			n, err := unix.SendmsgN(fd, p, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
			if errors.Is(err, unix.EOPNOTSUPP) { // a socket that takes no flags: as before
				return f.Write(p)
			}
			return max(n, 0), err
		}, Wait: f}
	}
	return logline.Output{Try: f.Write, Wait: f}
}

// reopen opens w's pipe, FIFO or terminal (st: its fstat) again through /proc, as an open file
// description of drainit's own in non-blocking mode, or returns nil: a blocking write to a pipe
// nobody reads holds a thread, which at a pids limit can cost the one the runtime aborts for
// (docs/exit-and-logs.md). The app keeps the description it inherited, in blocking mode:
// O_NONBLOCK set on a duplicate would reach it too.
func reopen(w *os.File, st *unix.Stat_t) *os.File {
	if flags, err := unix.FcntlInt(w.Fd(), unix.F_GETFL, 0); err != nil || flags&unix.O_ACCMODE == unix.O_RDONLY {
		return nil // not writable: the log's writes fail as they would have
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(w.Fd())), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil // no /proc, or a pipe whose reader has gone (ENXIO)
	}
	var again unix.Stat_t
	if unix.Fstat(fd, &again) != nil || again.Dev != st.Dev || again.Ino != st.Ino || again.Rdev != st.Rdev {
		_ = unix.Close(fd) // not w's file: a /proc that is not this process's
		return nil
	}
	// The first file the Go poller takes makes it open its epoll and eventfd descriptors, and
	// where it cannot (RLIMIT_NOFILE reached) the runtime aborts the program: seen at a limit of
	// 6, where drainit, unable to fork the app, had exited 126 with one line. Descriptors are
	// given lowest first, so fd is about how many are open: with less than two more free, the
	// log is written in blocking mode.
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil || uint64(fd)+3 >= lim.Cur {
		_ = unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), w.Name())
}

// escapeMessage escapes the control characters in a console line's message (logline.Escape). A
// message can be an exec hook's output line, whose bytes may come from anywhere: on a terminal
// they must neither drive it nor, with a carriage return, write over the line's own time and
// level. JSON lines need nothing, and the console writer quotes a string field itself.
func escapeMessage(ev map[string]any) error {
	if m, ok := ev[zerolog.MessageFieldName].(string); ok {
		ev[zerolog.MessageFieldName] = logline.Escape(m)
	}
	return nil
}

// escapeList escapes, in a console line's field that is a list or an object (the app's command, a
// hook's argv), what a terminal would act on (logline.EscapeJSON): the console writer prints
// such a field as encoding/json writes it, which leaves DEL, the C1 controls and a
// right-to-left override raw.
func escapeList(v any) string {
	if b, ok := v.([]byte); ok {
		return string(logline.EscapeJSON(b))
	}
	return fmt.Sprint(v)
}

// levelGiven reports whether the user chose the log level (--log-level or DRAINIT_LOG_LEVEL):
// then every line of that level shows, on a terminal too. Only asked on a terminal, so the
// second reading of the options costs nothing where drainit usually runs.
func levelGiven(args []string, env map[string]string) bool {
	return config.Validate(args, env).Settings["log-level"].Source != ""
}

// quietWriter is drainit's log on a terminal when no log level was chosen, where the log shares
// the screen with the app: info lines are dropped until a stop sequence starts, warnings and
// errors always pass (docs/exit-and-logs.md, "Logs"). A stop sequence's events, and only they,
// carry "elapsed": the first line with that key opens the gate for good. In zerolog's JSON the
// text `"elapsed":` can only be a key, since quotes inside a value are escaped.
type quietWriter struct {
	out  io.Writer
	open atomic.Bool
}

var elapsedKey = []byte(`"elapsed":`)

// Write passes p on: zerolog calls WriteLevel, this is for any other writer of the log.
func (q *quietWriter) Write(p []byte) (int, error) { return q.out.Write(p) }

// WriteLevel drops p while the gate is closed and the level is below warn.
func (q *quietWriter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	if l < zerolog.WarnLevel && !q.open.Load() {
		if !bytes.Contains(p, elapsedKey) {
			return len(p), nil
		}
		q.open.Store(true)
	}
	return q.out.Write(p)
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
