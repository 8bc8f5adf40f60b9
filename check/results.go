package check

import (
	"fmt"
	"slices"
	"sort"
)

// Result is a finding as `drainit check` reports it: where it came from in a stream, and
// whether it is ignored. The Finding's fields come first in the JSON, as before.
type Result struct {
	Finding
	Document  int    `json:"document,omitempty"`  // the document's number in standard input; 0 for a file
	Source    string `json:"source,omitempty"`    // Helm's "# Source:" path for the document, from standard input
	Ignored   bool   `json:"ignored,omitempty"`   // ignored: counted apart, never failing the check
	IgnoredBy string `json:"ignoredBy,omitempty"` // "annotation" (drainit.io/ignore) or "flag" (--ignore)

	suppressions []suppression
	workload     int // the index of the workload in Evaluate's input
}

// suppression is one reason a result is ignored: the annotation (with its line) or the flag.
type suppression struct {
	byAnnotation bool
	line         int
	template     bool // the annotation is on the pod template
}

// The values of Result.IgnoredBy.
const (
	IgnoredByAnnotation = "annotation"
	IgnoredByFlag       = "flag"
)

// Results wraps plain findings, none ignored.
func Results(fs []Finding) []Result {
	out := make([]Result, len(fs))
	for i, f := range fs {
		out[i] = Result{Finding: f}
	}
	return out
}

// Evaluate applies the rules to each workload, then the ignores: the drainit.io/ignore
// annotations of the workload and the rules of ignore (--ignore; ids already known to be rules).
// An annotation naming no rule is a finding of its own (ignore-annotation, a warning). Results
// come in the order of Check: by workload, then by line.
func Evaluate(ws []Workload, ignore []string) []Result {
	var out []Result
	for i := range ws {
		rs := evaluate(&ws[i], ignore)
		for j := range rs {
			rs[j].workload = i
		}
		out = append(out, rs...)
	}
	return out
}

func evaluate(w *Workload, ignore []string) []Result {
	rs := Results(Check([]Workload{*w}))
	annotated := map[string]Annotation{}
	for _, a := range w.Ignores {
		for _, id := range ParseRuleList(a.Value) {
			if _, ok := LookupRule(id); !ok {
				rs = append(rs, Result{Finding: Finding{File: w.File, Line: a.Line, Severity: Warning, Rule: RuleIgnoreAnnotation,
					Kind: w.Kind, Name: w.Name, Message: fmt.Sprintf("%s names %q, which is no rule of this drainit: it ignores nothing",
						IgnoreAnnotation, id)}})
				continue
			}
			if _, dup := annotated[id]; !dup {
				annotated[id] = a
			}
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Line < rs[j].Line })
	for i := range rs {
		r := &rs[i]
		r.Document, r.Source = w.Document, w.Source
		if a, ok := annotated[r.Rule]; ok {
			r.suppressions = append(r.suppressions, suppression{byAnnotation: true, line: a.Line, template: a.OnTemplate})
		}
		if slices.Contains(ignore, r.Rule) {
			r.suppressions = append(r.suppressions, suppression{})
		}
		if len(r.suppressions) > 0 {
			r.Ignored = true
			r.IgnoredBy = IgnoredByFlag
			if r.suppressions[0].byAnnotation {
				r.IgnoredBy = IgnoredByAnnotation
			}
		}
	}
	return rs
}

// severityRank orders severities: a higher rank is worse.
func severityRank(s Severity) int {
	switch s {
	case Error:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// ParseSeverity reads a severity threshold: error, warning or info.
func ParseSeverity(s string) (Severity, error) {
	switch sev := Severity(s); sev {
	case Error, Warning, Info:
		return sev, nil
	}
	return "", fmt.Errorf("%q: must be error, warning or info", s)
}

// Fails says whether a result fails the check at a threshold: it is not ignored, and at least
// as severe.
func (r Result) Fails(threshold Severity) bool {
	return !r.Ignored && severityRank(r.Severity) >= severityRank(threshold)
}

// Failing counts the results that fail the check at a threshold.
func Failing(rs []Result, threshold Severity) int {
	n := 0
	for _, r := range rs {
		if r.Fails(threshold) {
			n++
		}
	}
	return n
}
