package check

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The app's own shutdown time, where the manifest shows it: a Spring Boot app's
// spring.lifecycle.timeout-per-shutdown-phase.

// appTime is how long the app may take to shut down, and where that comes from.
type appTime struct {
	d    time.Duration
	src  string
	line int
}

// javaOptsVars are the JVM options variables springProp reads system properties from: after the
// command-line arguments, before the environment, in Spring's order of precedence.
var javaOptsVars = []string{"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS"}

// springProp finds a Spring Boot property in the container: --prop=v or -Dprop=v in the command
// line or in a JVM options variable, or its environment-variable form (relaxed binding: dots to
// underscores, dashes dropped or, the legacy form, to underscores).
func springProp(words []word, env envMap, prop string) (val, src string, line int, ok bool) {
	for _, pre := range []string{"--", "-D"} {
		for _, w := range words {
			if v, found := strings.CutPrefix(w.s, pre+prop+"="); found {
				return v, pre + prop, w.line, true
			}
		}
	}
	for _, name := range javaOptsVars {
		v, found := env.lookup(name)
		if !found || !v.Known {
			continue
		}
		for _, f := range strings.Fields(v.Value) {
			if val, found := strings.CutPrefix(f, "-D"+prop+"="); found {
				return val, name + " -D" + prop, v.Line, true
			}
		}
	}
	upper := strings.ToUpper(strings.ReplaceAll(prop, ".", "_"))
	for _, name := range []string{strings.ReplaceAll(upper, "-", ""), strings.ReplaceAll(upper, "-", "_")} {
		if v, found := env.lookup(name); found && v.Known {
			return v.Value, name, v.Line, true
		}
	}
	return "", "", 0, false
}

// springDefaultTimeout is Spring Boot's spring.lifecycle.timeout-per-shutdown-phase default.
const springDefaultTimeout = 30 * time.Second

// springShutdown returns the Spring Boot shutdown timeout the container sets, if any. A value
// that cannot be read, or a bare number (Spring reads it as milliseconds), is a warning.
func springShutdown(c *Container, words []word, env envMap) (*appTime, *Finding) {
	const prop = "spring.lifecycle.timeout-per-shutdown-phase"
	if val, src, line, ok := springProp(words, env, prop); ok {
		d, bare, err := parseSpringDuration(val)
		if err != nil {
			return nil, &Finding{Line: line, Severity: Warning, Rule: RuleSpringDuration, Message: fmt.Sprintf(
				"%s %q: %v; the shutdown time is not checked", src, val, err)}
		}
		at := &appTime{d: d, src: "Spring Boot " + src, line: line}
		if bare {
			return at, &Finding{Line: line, Severity: Warning, Rule: RuleSpringDuration, Message: fmt.Sprintf(
				"%s %q has no unit: Spring Boot reads a bare number as milliseconds, so the app gets %s to shut down; write %ss if seconds were meant",
				src, val, fmtDur(d), val)}
		}
		return at, nil
	}
	if val, src, line, ok := springProp(words, env, "server.shutdown"); ok && strings.EqualFold(strings.TrimSpace(val), "graceful") {
		return &appTime{d: springDefaultTimeout, src: "Spring Boot " + src + "=graceful, default timeout-per-shutdown-phase", line: line}, nil
	}
	return nil, nil
}

// parseSpringDuration reads a duration as Spring Boot does: "30s", "500ms", "1m" (units ns, us,
// ms, s, m, h, d, any case), ISO-8601 ("PT30S"), or a bare number of milliseconds (bare says so).
func parseSpringDuration(s string) (d time.Duration, bare bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, fmt.Errorf("empty duration")
	}
	if s[0] == 'P' || s[0] == 'p' || ((s[0] == '+' || s[0] == '-') && len(s) > 1 && (s[1] == 'P' || s[1] == 'p')) {
		return parseISODuration(s)
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i = 1
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i {
		return 0, false, fmt.Errorf("not a Spring Boot duration (like 30s or PT30S)")
	}
	n, err := strconv.ParseInt(s[:j], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("not a Spring Boot duration: %w", err)
	}
	if n < 0 {
		return 0, false, fmt.Errorf("negative duration")
	}
	units := map[string]time.Duration{
		"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond, "": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour,
	}
	u, ok := units[strings.ToLower(s[j:])]
	if !ok {
		return 0, false, fmt.Errorf("unknown unit %q (Spring Boot knows ns, us, ms, s, m, h, d)", s[j:])
	}
	if n > int64(forever/u) {
		return forever, s[j:] == "", nil
	}
	return time.Duration(n) * u, s[j:] == "", nil
}

// parseISODuration reads the ISO-8601 durations java.time.Duration.parse accepts, as far as
// shutdown timeouts go: PnD, then T with nH, nM, n.nS, each optional but at least one present.
func parseISODuration(s string) (time.Duration, bool, error) {
	bad := fmt.Errorf("not an ISO-8601 duration Spring Boot reads (like PT30S)")
	t := strings.ToUpper(strings.TrimPrefix(s, "+"))
	t, ok := strings.CutPrefix(t, "P")
	if !ok || t == "" {
		return 0, false, bad
	}
	var total float64
	inTime, parts := false, false
	var last float64
	for t != "" {
		if t[0] == 'T' {
			if inTime || len(t) == 1 {
				return 0, false, bad
			}
			inTime, t = true, t[1:]
			continue
		}
		j := 0
		for j < len(t) && (t[j] >= '0' && t[j] <= '9' || t[j] == '.') {
			j++
		}
		if j == 0 || j == len(t) {
			return 0, false, bad
		}
		f, err := strconv.ParseFloat(t[:j], 64)
		if err != nil {
			return 0, false, bad
		}
		var unit float64
		switch {
		case t[j] == 'D' && !inTime:
			unit = 86400
		case t[j] == 'H' && inTime:
			unit = 3600
		case t[j] == 'M' && inTime:
			unit = 60
		case t[j] == 'S' && inTime:
			unit = 1
		}
		if unit == 0 || (last != 0 && unit >= last) {
			return 0, false, bad // unknown, or out of order: D, H, M, S
		}
		last = unit
		if unit != 1 && strings.Contains(t[:j], ".") {
			return 0, false, bad // only seconds take a fraction
		}
		total += f * unit
		parts = true
		t = t[j+1:]
	}
	if !parts {
		return 0, false, bad
	}
	if total*float64(time.Second) >= float64(forever) {
		return forever, false, nil
	}
	return time.Duration(total * float64(time.Second)), false, nil
}
