package check

import (
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/drainit/drainit/signals"
)

// The prestop-signals-sandbox rule. With shareProcessNamespace: true a pod's containers share one
// PID namespace whose PID 1 is the sandbox's pause, not a container's first process, so a
// preStop that signals PID 1 (`sleep 10 && kill -TERM 1`, the classic hook for an app that stops
// on its own signal) signals the pause. The pause (kubernetes build/pause/linux/pause.c) exits on
// SIGTERM and SIGINT, and the kernel then kills every other process of the namespace: all the
// pod's containers, at once, with SIGKILL. It has no handler for anything else (but SIGCHLD,
// which it reaps on), and the kernel gives PID 1 no signal it has no handler for from inside its
// namespace: any other signal reaches nobody.

// signalsSandbox reports a preStop exec hook that sends a signal to PID 1 in a pod whose
// containers share their PID namespace.
func (k *containerCheck) signalsSandbox(env envMap) {
	h := k.c.PreStop
	if h == nil || !h.IsExec {
		return
	}
	sig, ok := killsPID1(h.Exec, env)
	if !ok {
		return
	}
	what := "the preStop hook " + quoteCmd(h.Exec) + " sends " + signals.Name(sig) + " to PID 1, which with shareProcessNamespace: true " +
		"is the pod's sandbox (pause), not this container's first process: "
	if sig == syscall.SIGTERM || sig == syscall.SIGINT {
		fix := "leave the signal to the kubelet, which sends the container its stop signal after the hook"
		if k.dc != nil {
			fix += " (drainit drains on it; to drain within the hook, run [\"/drainit\", \"prestop\"])"
		}
		k.add(h.Line, Error, RuleSignalsSandbox, "%sthe pause exits on it, and the kernel SIGKILLs every container of the pod at once, "+
			"with no drain and no graceful stop; %s", what, fix)
		return
	}
	k.add(h.Line, Warning, RuleSignalsSandbox, "%sthe pause has no handler for it, and the signal reaches nobody; signal the app by its own pid", what)
}

// killsPID1 finds a kill of PID 1 in an exec hook: run directly (kill, busybox kill) or in a
// shell's script (busybox sh too), among its simple commands. It returns the signal sent (not 0: kill -0 tests
// and sends nothing).
func killsPID1(argv []string, env envMap) (syscall.Signal, bool) {
	if len(argv) == 0 {
		return 0, false
	}
	prog := path.Base(argv[0])
	if prog == "busybox" && len(argv) > 1 {
		argv = argv[1:]
		prog = path.Base(argv[0])
	}
	if shells[prog] && prog != "busybox" {
		script, ok := shellScript(prog, argv[1:])
		if !ok {
			return 0, false
		}
		for _, cmd := range shellCommands(script) {
			if sig, ok := killCommand(env.expandShell(plainWords(cmd.words))); ok {
				return sig, true
			}
		}
		return 0, false
	}
	return killCommand(argv)
}

// killCommand reads one command's words: a kill (after exec, command or busybox) whose operands
// include PID 1, and its signal.
func killCommand(words []string) (syscall.Signal, bool) {
	for len(words) > 0 && (words[0] == "exec" || words[0] == "command" || path.Base(words[0]) == "busybox") {
		words = words[1:]
	}
	if len(words) == 0 || path.Base(words[0]) != "kill" {
		return 0, false
	}
	sig, pids, ok := killArgs(words[1:])
	if !ok || sig == 0 || !slices.Contains(pids, "1") {
		return 0, false
	}
	return sig, true
}

// killArgs reads kill's arguments as the shells' builtins and procps' and util-linux's kill do:
// the signal as -SIG, -N, -s SIG, -n N or --signal SIG (SIGTERM when none), then the operands,
// after an optional "--". sig is 0 for kill -0, which sends nothing; ok is false for what sends
// nothing either (-l, -L) or does not parse.
func killArgs(args []string) (sig syscall.Signal, operands []string, ok bool) {
	sig = syscall.SIGTERM
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := ""
		switch {
		case a == "--":
			return sig, args[i+1:], true
		case a == "-s" || a == "-n" || a == "--signal":
			if i+1 == len(args) {
				return 0, nil, false
			}
			i++
			name = args[i]
		case strings.HasPrefix(a, "--signal="):
			name = strings.TrimPrefix(a, "--signal=")
		case a == "-l" || a == "-L" || strings.HasPrefix(a, "--"):
			return 0, nil, false
		case len(a) > 1 && a[0] == '-' && i == 0:
			name = a[1:]
		default:
			return sig, args[i:], true
		}
		if name == "0" {
			sig = 0
			continue
		}
		s, err := signals.Parse(name)
		if err != nil {
			return 0, nil, false
		}
		sig = s
	}
	return sig, nil, true
}
