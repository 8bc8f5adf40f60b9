package check

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// Quarkus: at SIGTERM, if built with quarkus.shutdown.delay-enabled=true, it fails its readiness
// check and keeps serving for quarkus.shutdown.delay; then it waits up to quarkus.shutdown.timeout
// for running requests. Both are run-time properties, unset by default: then it shuts down at
// once, and there is nothing to check. apps.md has the sources and the duration syntax.
//
// Properties come from Java system properties (-Dquarkus.shutdown.timeout=20s on the command
// line or in quarkusOptsVars) before the environment (QUARKUS_SHUTDOWN_TIMEOUT).
//
// Evidence: a quarkus.shutdown.* property in one of those places. A build-time property set in
// the container changes nothing: Quarkus warns at start that it is fixed at build time.

const quarkusDoc = "quarkus.io/guides/lifecycle#graceful-shutdown"

// quarkusOptsVars are the JVM options variables a Quarkus container may read system
// properties from: the JVM's own and those of the run-java.sh script in Quarkus's images.
var quarkusOptsVars = []string{"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS", "JAVA_OPTS_APPEND"}

// quarkusValue is a Quarkus property as the container sets it.
type quarkusValue struct {
	val, src string
	line     int
	found    bool
	shown    bool // false: set from somewhere the manifest does not show
}

// quarkusProp finds a property: -Dprop=v in the command line or a JVM options variable, then
// its environment form (every character not a letter or digit to _, upper case).
func quarkusProp(words []word, env envMap, prop string) quarkusValue {
	for _, w := range words {
		if v, ok := strings.CutPrefix(w.s, "-D"+prop+"="); ok {
			return quarkusValue{v, "-D" + prop, w.line, true, !unseen(v)}
		}
	}
	for _, name := range quarkusOptsVars {
		ev, shown, _ := envKnown(env, name)
		if !shown {
			continue
		}
		for _, f := range strings.Fields(ev.Value) {
			if v, ok := strings.CutPrefix(f, "-D"+prop+"="); ok {
				return quarkusValue{v, name + " -D" + prop, ev.Line, true, true}
			}
		}
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, prop)
	if ev, ok := env.lookup(name); ok {
		ev2, shown, _ := envKnown(env, name)
		return quarkusValue{ev2.Value, name, ev.Line, true, shown}
	}
	return quarkusValue{}
}

func quarkusStop(_ *Container, words []word, env envMap) *appStop {
	timeout := quarkusProp(words, env, "quarkus.shutdown.timeout")
	delay := quarkusProp(words, env, "quarkus.shutdown.delay")
	enabled := quarkusProp(words, env, "quarkus.shutdown.delay-enabled")
	if !timeout.found && !delay.found && !enabled.found {
		return nil
	}
	a := &appStop{name: "Quarkus", line: max(timeout.line, delay.line, enabled.line)}
	if enabled.found {
		a.warn(enabled.line, RuleQuarkusBuildTime, "%s is a build-time property: set in the container it changes nothing "+
			"(Quarkus warns at start that it is fixed at build time), so the shutdown delay runs only if the application was built "+
			"with quarkus.shutdown.delay-enabled=true; set it in application.properties and rebuild (%s)", enabled.src, quarkusDoc)
	}
	var total time.Duration
	var parts []string
	line := 0
	for _, p := range []quarkusValue{delay, timeout} {
		if !p.found {
			continue
		}
		if !p.shown {
			return a
		}
		if strings.TrimSpace(p.val) == "" {
			continue // an empty value is no value
		}
		d, err := parseQuarkusDuration(p.val)
		if err != nil {
			a.warn(p.line, RuleQuarkusDuration, "%s %q: %v; the shutdown time is not checked", p.src, p.val, err)
			return a
		}
		total = config.AddDur(total, d)
		parts = append(parts, p.src+" "+p.val)
		if line == 0 || p.line > line {
			line = p.line
		}
	}
	if len(parts) == 0 {
		return a
	}
	a.at = &appTime{d: total, src: "Quarkus " + strings.Join(parts, " + "), line: line}
	return a
}

var (
	quarkusSeconds = regexp.MustCompile(`^[-+]?\d+$`)
	quarkusMillis  = regexp.MustCompile(`^[-+]?\d+(?i:ms)$`)
	quarkusTime    = regexp.MustCompile(`^(?:[-+]?\d+(?:\.\d+)?[hmsHMS])+$`)
	quarkusDays    = regexp.MustCompile(`^(?:[-+]?\d+(?:\.\d+)?[dD])+$`)
)

// parseQuarkusDuration reads a duration as Quarkus's DurationConverter does.
func parseQuarkusDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("not a duration Quarkus reads (like 20s, 500ms, 1m30s or PT20S)")
	var d time.Duration
	var err error
	num, unit := t, time.Second
	if quarkusMillis.MatchString(t) {
		num, unit = t[:len(t)-2], time.Millisecond // "500ms"
	}
	switch {
	case quarkusSeconds.MatchString(num): // a whole number of seconds, or of milliseconds
		n, perr := strconv.ParseInt(num, 10, 64)
		if perr != nil {
			return 0, bad
		}
		if n < 0 {
			return 0, fmt.Errorf("negative duration")
		}
		return scaleDur(n, unit), nil
	case quarkusTime.MatchString(t):
		d, _, err = parseISODuration("PT" + t)
	case quarkusDays.MatchString(t):
		d, _, err = parseISODuration("P" + t)
	default:
		if strings.HasPrefix(t, "-") {
			return 0, fmt.Errorf("negative duration")
		}
		d, _, err = parseISODuration(t)
	}
	if err != nil {
		if strings.Contains(t, "-") {
			return 0, fmt.Errorf("negative duration")
		}
		return 0, bad
	}
	return d, nil
}
