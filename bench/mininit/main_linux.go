// Command mininit is the floor for a Go init, the benchmark's reference point: what any Go init
// pays before its own code does anything. Nothing but the runtime, os/signal and syscall: no
// flags package, no logger, no configuration.
//
//	mininit [-early | -notify | -forward] [--] COMMAND [ARG...]
//
// Plain, it starts COMMAND (a path, not searched in PATH) with syscall.ForkExec in its own
// session, waits for it with a blocking wait4(-1) and exits with its status. -early first
// registers (signal.Notify) only the fifteen signals any Go init must catch before its app runs,
// those whose default action would end or stop it (HUP, INT, QUIT, TERM, STKFLT, the faults when
// sent: ILL, TRAP, ABRT, BUS, FPE, SEGV, SYS; TSTP, TTIN, TTOU): the floor the benchmark holds
// drainit's start-up to. -notify registers every signal drainit catches, to show what that
// costs. Neither forwards anything. -forward is a minimal working init: it forwards each of those
// signals to the app's process group and reaps every child on SIGCHLD, as drainit does, with
// nothing else.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	args := os.Args[1:]
	mode := ""
	if len(args) > 0 && (args[0] == "-early" || args[0] == "-notify" || args[0] == "-forward") {
		mode, args = args[0], args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		_, _ = os.Stderr.WriteString("usage: mininit [-early | -notify | -forward] [--] COMMAND [ARG...]\n")
		os.Exit(2)
	}
	var sigs chan os.Signal
	switch mode {
	case "-early":
		sigs = make(chan os.Signal, 16)
		signal.Notify(sigs, fatal...)
	case "-notify", "-forward":
		sigs = make(chan os.Signal, 128)
		signal.Notify(sigs, catchable()...)
	}
	pid, err := syscall.ForkExec(args[0], args, &syscall.ProcAttr{
		Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		_, _ = os.Stderr.WriteString("mininit: " + err.Error() + "\n")
		os.Exit(127)
	}
	if mode != "-forward" {
		for {
			var ws syscall.WaitStatus
			p, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				os.Exit(1)
			}
			if p == pid {
				os.Exit(status(ws))
			}
		}
	}
	for sig := range sigs {
		s := sig.(syscall.Signal)
		if s != syscall.SIGCHLD {
			_ = syscall.Kill(-pid, s)
			continue
		}
		for {
			var ws syscall.WaitStatus
			p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || p <= 0 {
				break
			}
			if p == pid && (ws.Exited() || ws.Signaled()) {
				os.Exit(status(ws))
			}
		}
	}
}

// fatal are the signals whose default action in a Go program would end it (HUP, INT, QUIT, TERM,
// STKFLT, and ILL, TRAP, ABRT, BUS, FPE, SEGV, SYS when a kill sends them: the runtime exits, or
// as PID 1 exits with status 2) or stop it (TSTP, TTIN, TTOU): an init must catch them before it
// starts the app, since one arriving before then would otherwise leave the app without its init,
// or never started. Of the faults only ABRT costs a round trip to register.
var fatal = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGSTKFLT,
	syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSYS,
	syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
}

// catchable is the set drainit registers (SIGCHLD, signals.Early and signals.Late, copied to
// keep this program free of drainit's packages): everything but KILL and STOP (uncatchable), URG
// (the runtime's preemption signal), PIPE and the C library's 32 and 33.
func catchable() []os.Signal {
	var out []os.Signal
	for s := syscall.Signal(1); s <= 64; s++ {
		switch s {
		case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGURG, syscall.SIGPIPE, 32, 33:
			continue
		}
		out = append(out, s)
	}
	return out
}

func status(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
