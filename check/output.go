package check

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// Counts tallies findings by severity; ignored findings are counted apart, whatever their
// severity.
type Counts struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Infos    int `json:"infos"`
	Ignored  int `json:"ignored"`
}

// CountResults tallies the results.
func CountResults(rs []Result) Counts {
	var c Counts
	for _, r := range rs {
		switch {
		case r.Ignored:
			c.Ignored++
		case r.Severity == Error:
			c.Errors++
		case r.Severity == Warning:
			c.Warnings++
		case r.Severity == Info:
			c.Infos++
		}
	}
	return c
}

// WriteText writes one line per finding:
//
//	deploy.yaml:23: error: container "web": grace 60s, preStop 55s … (shutdown-exceeds-grace)
func WriteText(w io.Writer, fs []Finding) error {
	return WriteTextResults(w, Results(fs))
}

// WriteTextResults writes one line per result that is not ignored (the summary counts those).
// A result from standard input ends with the document it is in, and Helm's source path:
//
//	<stdin>:23: error: container "web": … (shutdown-exceeds-grace) [document 2, web/templates/deployment.yaml]
func WriteTextResults(w io.Writer, rs []Result) error {
	for _, r := range rs {
		if r.Ignored {
			continue
		}
		if _, err := fmt.Fprintf(w, "%s:%d: %s: %s: %s (%s)%s\n", displayName(r.File), r.Line, r.Severity, subject(r.Finding), r.Message, r.Rule,
			streamSuffix(r)); err != nil {
			return fmt.Errorf("write findings: %w", err)
		}
	}
	return nil
}

// displayName is a file name as text output shows it: as it is, unless it holds what a terminal
// would act on or a reader could not see (an escape sequence, a carriage return, a line break
// that would split a finding's line, a right-to-left override, bytes that are not UTF-8); then
// Go-quoted, every such character escaped.
func displayName(name string) string {
	if !utf8.ValidString(name) {
		return strconv.Quote(name)
	}
	for _, r := range name {
		if !strconv.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	return name
}

// subject is what a finding is about: its container, or the object for a pod-level finding.
func subject(f Finding) string {
	if f.Container == "" {
		return fmt.Sprintf("%s %q", f.Kind, f.Name)
	}
	return fmt.Sprintf("container %q", f.Container)
}

// streamSuffix locates a result from standard input beyond its line: " [document 2,
// web/templates/deployment.yaml]"; "" for a file.
func streamSuffix(r Result) string {
	switch {
	case r.Document == 0:
		return ""
	case r.Source != "":
		return fmt.Sprintf(" [document %d, %s]", r.Document, displayName(r.Source))
	}
	return fmt.Sprintf(" [document %d]", r.Document)
}

// Report is the JSON document `drainit check --format json` writes.
type Report struct {
	Findings []Result `json:"findings"` // never null; ignored ones included, marked
	Counts
	Workloads  int       `json:"workloads"`          // pod templates checked
	Containers int       `json:"containers"`         // containers checked
	Problems   []Problem `json:"problems,omitempty"` // found files that could not be checked
}

// NewReport builds the JSON report for the workloads checked and their findings.
func NewReport(ws []Workload, fs []Finding) Report {
	in := &Inputs{Results: Results(fs), Workloads: len(ws)}
	for _, w := range ws {
		in.Containers += len(w.Containers)
	}
	return BuildReport(in)
}

// BuildReport builds the JSON report for the inputs checked: their results, and the files that
// could not be checked.
func BuildReport(in *Inputs) Report {
	r := Report{Findings: in.Results, Counts: CountResults(in.Results), Workloads: in.Workloads,
		Containers: in.Containers, Problems: in.Problems}
	if r.Findings == nil {
		r.Findings = []Result{}
	}
	return r
}

// WriteJSON writes the report as one indented JSON document.
func WriteJSON(w io.Writer, r Report) error {
	return writeIndented(w, r, "write findings")
}

// writeIndented writes v as one indented JSON document, with <, > and & as they are; what
// names the write in its error.
func writeIndented(w io.Writer, v any, what string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
