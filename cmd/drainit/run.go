package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/signals"
	"github.com/drainit/drainit/supervisor"
)

// runCmd is the default subcommand: run the app under the supervisor.
func runCmd(args []string) int {
	// First of all, before even the flags are read: from here on every signal that matters
	// waits and reaches the app once it runs.
	chld, sigs := notify()

	cfg, err := config.Parse(args, environ(), os.Stdout)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "drainit: %v\n", err)
		return 2
	}
	log := newLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	opts, err := buildOptions(cfg, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "drainit: %v\n", err)
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

// buildOptions turns the hook and control-server options into the supervisor's Options. Like
// config.Parse it fails before the app starts, naming the option and the value.
func buildOptions(cfg *config.Config, log zerolog.Logger) (supervisor.Options, error) {
	opts := supervisor.Options{HookTimeout: cfg.HookTimeout, ControlToken: cfg.HTTPToken, Children: &hooks.Children{}}
	// exec before http within a stage, in a fixed order, so that runs are repeatable.
	for _, stage := range []string{"offline", "online", "post-stop"} {
		for _, kind := range []string{"exec", "http"} {
			spec := config.HookSpec{Stage: stage, Kind: kind}
			v, ok := cfg.Hooks[spec]
			if !ok {
				continue
			}
			var h hooks.Hook
			var err error
			if kind == "exec" {
				h, err = hooks.ParseExec(spec.Flag(), v, opts.Children)
			} else {
				h, err = hooks.ParseHTTP(spec.Flag(), v)
			}
			if err != nil {
				return opts, &config.Error{Option: cfg.OptionName(spec.Flag()), Value: v, Err: err}
			}
			switch stage {
			case "offline":
				opts.Offline = append(opts.Offline, h)
			case "online":
				opts.Online = append(opts.Online, h)
			case "post-stop":
				opts.PostStop = append(opts.PostStop, h)
			}
		}
	}
	if cfg.ReadyProbe != "" {
		p, err := hooks.ParseProbe(cfg.ReadyProbe)
		if err != nil {
			return opts, &config.Error{Option: cfg.OptionName("ready-probe"), Value: cfg.ReadyProbe, Err: err}
		}
		opts.Probe = p
	}
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return opts, &config.Error{Option: cfg.OptionName("http-addr"), Value: cfg.HTTPAddr, Err: err}
		}
		opts.Control = ln
	}
	return opts, nil
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
