package config

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Stray is a DRAINIT_* variable that is no option's. drainit ignores it, and says so: it is most
// likely a misspelt option (DRAINIT_GRACE_PERIODS) whose value the user expects to apply. Not an
// error: a variable a later drainit reads must not stop an earlier one from starting.
type Stray struct {
	Name    string
	Suggest string // the option's variable it is most likely a misspelling of, or ""
}

// String is the warning drainit logs at start, and drainit check reports.
func (s Stray) String() string {
	msg := clip(s.Name) + " is not one of drainit's variables: ignored"
	if base, ok := strings.CutSuffix(s.Name, "_FILE"); ok && optionEnv(base) {
		// The convention of images that read a secret from a file: the hint to set the
		// variable itself to the path would make the path the value.
		return msg + "; drainit reads no _FILE variables: set " + base + " to the value itself (from a Secret: env valueFrom.secretKeyRef)"
	}
	if s.Suggest != "" {
		msg += " (" + s.Suggest + "?)"
	}
	return msg
}

// Strays lists the DRAINIT_* variables in environ that are no option's, by name; SupervisorEnv,
// which drainit sets itself, is none.
func Strays(environ map[string]string) []Stray {
	var out []Stray
	for name := range environ {
		if strings.HasPrefix(name, EnvPrefix) && !optionEnv(name) && name != SupervisorEnv {
			out = append(out, Stray{Name: name})
		}
	}
	slices.SortFunc(out, func(a, b Stray) int { return strings.Compare(a.Name, b.Name) })
	for i := range out {
		// Bounded: an environment may hold any number of names, of any length.
		if i < maxStrayHints && len(out[i].Name) <= maxStrayHintLen {
			out[i].Suggest = nearestEnv(out[i].Name)
		}
	}
	return out
}

// clip is a name as a message quotes it: maxStrayHintLen bytes at most, whole characters.
func clip(name string) string {
	n := maxStrayHintLen
	if len(name) <= n {
		return name
	}
	for n > 0 && !utf8.RuneStart(name[n]) {
		n-- // not in the middle of a character
	}
	return name[:n] + "…"
}

// How far Strays and nearestFlag look for the option a name misspells: short names (an
// option's name is under 30 bytes).
const (
	maxStrayHints   = 16
	maxStrayHintLen = 64
)

// optionEnv is whether name is an option's variable.
func optionEnv(name string) bool {
	return slices.ContainsFunc(options(), func(o Option) bool { return o.Env == name })
}

// nearestEnv is the option variable name is likeliest a misspelling of (see nearest).
func nearestEnv(name string) string {
	envs := make([]string, 0, len(options()))
	for _, o := range options() {
		envs = append(envs, o.Env)
	}
	return nearest(name, envs, len(EnvPrefix)+4)
}

// nearestFlag is the one of flags that name (without its dashes) is likeliest a misspelling of.
func nearestFlag(name string, flags []string) string {
	if len(name) > maxStrayHintLen {
		return ""
	}
	return nearest(name, flags, 4)
}

// nearest is the one of names that name is likeliest a misspelling of: one within 2 edits (a
// slip: DRAIN_DEALY, grace-perod), unless one it begins or is the beginning of is as close;
// else, when name is at least minPrefix long, the closest of those it begins or is the beginning
// of (DRAINIT_GRACE, --grace); else the closest within 3 edits; else "". A slip comes first:
// DRAINIT_DRAIN_DEALY begins with DRAINIT_DRAIN, but means DRAINIT_DRAIN_DELAY.
func nearest(name string, names []string, minPrefix int) string {
	slip, slipDist := "", 3
	prefix, prefixDist := "", 0
	near, nearDist := "", 4
	for _, n := range names {
		d := editDistance(name, n)
		if d < slipDist {
			slip, slipDist = n, d
		}
		if d < nearDist {
			near, nearDist = n, d
		}
		if len(name) >= minPrefix && (strings.HasPrefix(n, name) || strings.HasPrefix(name, n)) && (prefix == "" || d < prefixDist) {
			prefix, prefixDist = n, d
		}
	}
	switch {
	case slip != "" && (prefix == "" || slipDist < prefixDist):
		return slip
	case prefix != "":
		return prefix
	}
	return near
}

// editDistance is the number of edits from a to b, in bytes: insertions, deletions,
// substitutions and swaps of two neighbours (the optimal string alignment distance), a swap being
// the commonest slip of all (DEALY, PERIDO).
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows are enough.
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
