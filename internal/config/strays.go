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
	name := s.Name
	if n := maxStrayHintLen; len(name) > n {
		for n > 0 && !utf8.RuneStart(name[n]) {
			n-- // not in the middle of a character
		}
		name = name[:n] + "…"
	}
	msg := name + " is not one of drainit's variables: ignored"
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

// How far Strays looks for the option a stray variable misspells: the first few names, short
// ones (an option's name is under 30 bytes).
const (
	maxStrayHints   = 16
	maxStrayHintLen = 64
)

// optionEnv is whether name is an option's variable.
func optionEnv(name string) bool {
	return slices.ContainsFunc(options(), func(o Option) bool { return o.Env == name })
}

// nearestEnv is the option variable name is likeliest a misspelling of: of those it begins or
// is the beginning of (DRAINIT_GRACE, DRAINIT_DRAIN_DELAYS), the closest; else the closest within
// 3 edits; else "".
func nearestEnv(name string) string {
	best, dist := "", 4
	if len(name) >= len(EnvPrefix)+4 {
		for _, o := range options() {
			if strings.HasPrefix(o.Env, name) || strings.HasPrefix(name, o.Env) {
				if d := editDistance(name, o.Env); best == "" || d < dist {
					best, dist = o.Env, d
				}
			}
		}
		if best != "" {
			return best
		}
	}
	for _, o := range options() {
		if d := editDistance(name, o.Env); d < dist {
			best, dist = o.Env, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
