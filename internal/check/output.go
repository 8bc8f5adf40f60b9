package check

import (
	"encoding/json"
	"fmt"
	"io"
)

// Counts tallies findings by severity.
type Counts struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Infos    int `json:"infos"`
}

// Count tallies the findings.
func Count(fs []Finding) Counts {
	var c Counts
	for _, f := range fs {
		switch f.Severity {
		case Error:
			c.Errors++
		case Warning:
			c.Warnings++
		case Info:
			c.Infos++
		}
	}
	return c
}

// WriteText writes one line per finding:
//
//	deploy.yaml:23: error: container "web": grace 60s, preStop 55s … (shutdown-exceeds-grace)
func WriteText(w io.Writer, fs []Finding) error {
	for _, f := range fs {
		subject := fmt.Sprintf("container %q", f.Container)
		if f.Container == "" {
			subject = fmt.Sprintf("%s %q", f.Kind, f.Name)
		}
		if _, err := fmt.Fprintf(w, "%s:%d: %s: %s: %s (%s)\n", f.File, f.Line, f.Severity, subject, f.Message, f.Rule); err != nil {
			return fmt.Errorf("write findings: %w", err)
		}
	}
	return nil
}

// Report is the JSON document `drainit check --format json` writes.
type Report struct {
	Findings []Finding `json:"findings"` // never null
	Counts
	Workloads  int `json:"workloads"`  // pod templates checked
	Containers int `json:"containers"` // containers checked
}

// NewReport builds the JSON report for the workloads checked and their findings.
func NewReport(ws []Workload, fs []Finding) Report {
	r := Report{Findings: fs, Counts: Count(fs), Workloads: len(ws)}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for _, w := range ws {
		r.Containers += len(w.Containers)
	}
	return r
}

// WriteJSON writes the report as one indented JSON document.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write findings: %w", err)
	}
	return nil
}
