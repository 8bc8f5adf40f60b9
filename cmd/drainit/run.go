package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/signals"
	"github.com/drainit/drainit/supervisor"
)

// runCmd is the default subcommand: run the app under the supervisor. --help goes to stdout;
// mistakes and the log go to stderr.
func runCmd(args []string, stdout io.Writer, stderr *os.File) int {
	// First of all, before even the flags are read: from here on every signal that matters
	// waits and reaches the app once it runs.
	chld, sigs := notify()
	// The signals Go cannot catch would otherwise end drainit at their default action.
	if err := signals.IgnoreUncatchable(); err != nil {
		fmt.Fprintf(stderr, "drainit: %v\n", err)
	}

	cfg, err := config.Parse(args, environ(), stdout)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "drainit: %v\n", err)
		return 2
	}
	log := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	opts, err := buildOptions(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "drainit: %v\n", err)
		return 2
	}
	for _, w := range cfg.Warnings() {
		log.Warn().Msg(w)
	}
	code, err := supervisor.New(cfg, opts, log, sigs, chld).Run(context.Background())
	if err != nil {
		log.Error().Err(err).Int("status", code).Msg("app not started")
	}
	return code
}

// notify registers drainit's signals. SIGCHLD has a channel of its own, of one: a reap collects
// every child that has exited by then, so one pending notification is all the supervisor needs,
// and a storm of exiting orphans (measured: 3000 released at once filled a shared channel of
// 128) can never crowd a SIGTERM out of the channel the other signals wait in, where os/signal
// would drop it. That one holds two of each signal, more than the runtime can have pending at
// once (it coalesces repeats of the same signal).
func notify() (chld, sigs chan os.Signal) {
	chld = make(chan os.Signal, 1)
	signal.Notify(chld, unix.SIGCHLD)
	sigs = make(chan os.Signal, 2*signals.MaxSignal)
	signal.Notify(sigs, signals.Early()...)
	// The rarely sent rest while the app starts: see signals.Late for the cost this saves.
	go signal.Notify(sigs, signals.Late()...)
	return chld, sigs
}

// environ returns the environment as a map, for config.Parse.
func environ() map[string]string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// newLogger builds the zerolog logger: JSON lines, or console format when asked for or, by
// default, when w is a terminal.
func newLogger(w *os.File, format, level string) zerolog.Logger {
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	// UTC: a local time zone would load /etc/localtime on the first log line (~0.1 ms of every
	// start), and logs are compared across machines anyway.
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
	zerolog.DurationFieldUnit = time.Millisecond
	zerolog.DurationFieldInteger = true
	var out io.Writer = w
	if format == "console" || (format == "" && isTerminal(w)) {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Str("logger", "drainit").Logger()
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
