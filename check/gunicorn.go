package check

import (
	"fmt"
	"time"
)

// gunicorn: its workers finish the request in hand and are SIGKILLed --graceful-timeout seconds
// (a whole number, default 30) after SIGTERM. It reads the setting from the command line, then
// GUNICORN_CMD_ARGS, then its config file (gunicorn.conf.py in the working directory, or
// -c/--config), the command line winning; apps.md has the sources.
//
// Evidence: a "gunicorn" word in command or args ("python -m gunicorn", a shell script's
// command), or GUNICORN_CMD_ARGS, gunicorn's own variable.

const (
	gunicornDefault = 30 * time.Second
	gunicornDoc     = "docs.gunicorn.org/en/stable/settings.html#graceful-timeout"
)

func gunicornStop(_ *Container, words []word, env envMap) *appStop {
	args, line, found := programArgs(words, env, func(b string) bool { return b == "gunicorn" })
	ev, shown, maybe := envKnown(env, "GUNICORN_CMD_ARGS")
	if !found && !shown && !(maybe && ev.Line != 0) {
		return nil
	}
	a := &appStop{name: "gunicorn", line: line, doc: gunicornDoc}
	if a.line == 0 {
		a.line = ev.Line
	}
	// argparse takes any unambiguous prefix: --graceful is --graceful-timeout.
	const opt, minLen = "--graceful-timeout", len("--graceful")
	val, vline, set := optionValue(args, opt, minLen)
	src := "--graceful-timeout"
	namesConfig := func(ws []word) bool {
		_, _, long := optionValue(ws, "--config", len("--conf"))
		_, _, short := optionValue(ws, "-c", 0)
		return long || short
	}
	config := namesConfig(args)
	if !set && shown {
		envArgs := splitArgs(ev.Value, ev.Line)
		val, vline, set = optionValue(envArgs, opt, minLen)
		src = "GUNICORN_CMD_ARGS --graceful-timeout"
		config = config || namesConfig(envArgs)
	}
	switch {
	case set && unseen(val):
		return a // from somewhere the manifest does not show
	case set:
		n, ok := parsePythonInt(val)
		if !ok || n < 0 {
			why := fmt.Sprintf("gunicorn takes a whole number of seconds and refuses anything else at start (argument --graceful-timeout: invalid int value: %q), so the app does not start", val)
			if ok {
				why = "gunicorn refuses a negative value at start (\"Value must be positive\"), so the app does not start"
			}
			a.warn(vline, RuleGunicornDuration, "%s %q: %s; the shutdown time is not checked", src, val, why)
			return a
		}
		a.at = &appTime{d: seconds(n), src: fmt.Sprintf("gunicorn %s %s", src, val), line: vline}
	case config || maybe:
		// A config file, or a variable the manifest does not show, may set graceful_timeout.
	default:
		a.at = &appTime{d: gunicornDefault, src: "gunicorn's default --graceful-timeout 30s, " + gunicornDoc, line: a.line}
	}
	return a
}
