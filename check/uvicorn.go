package check

import "fmt"

// uvicorn: at SIGTERM it waits for open connections and background tasks, then runs the
// lifespan shutdown. --timeout-graceful-shutdown (0.22+, whole seconds; also
// UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN, the command line winning) bounds the wait, and without it
// there is no limit; apps.md has the sources.
//
// Evidence: a "uvicorn" word in command or args ("python -m uvicorn", a shell script's command),
// or UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN. uvicorn run by gunicorn (-k uvicorn.workers.UvicornWorker)
// is gunicorn's: it is found first.

const uvicornDoc = "www.uvicorn.org/settings/#timeouts"

func uvicornStop(_ *Container, words []word, env envMap) *appStop {
	const name = "UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN"
	args, line, found := programArgs(words, env, func(b string) bool { return b == "uvicorn" })
	ev, shown, maybe := envKnown(env, name)
	if !found && !shown && !(maybe && ev.Line != 0) {
		return nil
	}
	a := &appStop{name: "uvicorn", line: line, fix: "--timeout-graceful-shutdown N", doc: uvicornDoc}
	if a.line == 0 {
		a.line = ev.Line
	}
	val, vline, set := optionValue(args, "--timeout-graceful-shutdown", 0)
	src := "--timeout-graceful-shutdown"
	if !set && shown {
		val, vline, set, src = ev.Value, ev.Line, true, name
	}
	switch {
	case set && unseen(val):
	case set:
		n, ok := parsePythonInt(val)
		if !ok {
			a.warn(vline, RuleUvicornDuration, "%s %q: uvicorn takes a whole number of seconds and refuses anything else at start "+
				"(Invalid value for '--timeout-graceful-shutdown': %q is not a valid integer), so the app does not start; "+
				"the shutdown time is not checked", src, val, val)
			return a
		}
		// A negative timeout ends the wait at once, as 0 does.
		a.at = &appTime{d: seconds(max(n, 0)), src: fmt.Sprintf("uvicorn %s %s", src, val), line: vline}
	case found && !maybe:
		a.unbounded = true
		a.none = "uvicorn has no --timeout-graceful-shutdown (uvicorn's default: none)"
	}
	return a
}
