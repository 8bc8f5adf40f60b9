package check

// JUnit XML output, for CI systems that show test reports (GitLab, Jenkins, Azure Pipelines):
// one testsuite per file, one testcase per pod template (its pod-level rules) and one per
// container. A testcase fails when it has a finding at or above the severity threshold, the
// findings that make the exit status 1, so the report and the exit status agree. Findings
// below the threshold, and ignored ones, do not fail it: they are in the testcase's
// <system-out>, where the CI shows them beside the passing test. A file that could not be
// checked is a testsuite whose one testcase is an <error>.

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the pod templates' results, and the files that could not be checked, as
// JUnit XML. rs must be the Inputs' Results for its Templates (ReadOptions.Templates).
func WriteJUnit(w io.Writer, ws []Template, rs []Result, problems []Problem, threshold Severity) error {
	out := junitSuites{Name: "drainit check"}
	suiteOf := map[string]int{}
	suite := func(file string) *junitSuite {
		i, ok := suiteOf[file]
		if !ok {
			i = len(out.Suites)
			suiteOf[file] = i
			out.Suites = append(out.Suites, junitSuite{Name: file})
		}
		return &out.Suites[i]
	}
	// The case names so far, by file and name: a set kept as cases are added, not rebuilt for
	// each template, which made a file of many templates quadratic.
	caseNames := map[[2]string]bool{}
	byWorkload := make([][]Result, len(ws))
	for _, r := range rs {
		if r.workload >= 0 && r.workload < len(ws) {
			byWorkload[r.workload] = append(byWorkload[r.workload], r)
		}
	}
	for i := range ws {
		wl := &ws[i]
		s := suite(wl.File)
		object := fmt.Sprintf("%s %q", wl.Kind, wl.Name)
		if wl.Document > 0 {
			object += streamSuffix(Result{Document: wl.Document, Source: wl.Source})
		}
		if caseNames[[2]string{wl.File, object}] { // the same kind and name twice in a file: the line tells them apart
			object += fmt.Sprintf(" (line %d)", wl.Line)
		}
		s.Cases = append(s.Cases, junitCaseOf(wl.File, object, filterContainer(byWorkload[i], ""), threshold))
		caseNames[[2]string{wl.File, object}] = true
		for _, c := range wl.Containers {
			name := fmt.Sprintf("%s container %q", object, c)
			s.Cases = append(s.Cases, junitCaseOf(wl.File, name, filterContainer(byWorkload[i], c), threshold))
			caseNames[[2]string{wl.File, name}] = true
		}
	}
	for _, p := range problems {
		s := suite(p.File)
		s.Cases = append(s.Cases, junitCase{Classname: p.File, Name: "read",
			Error: &junitProblem{Message: p.Message, Type: "input", Text: p.String()}})
	}
	for i := range out.Suites {
		s := &out.Suites[i]
		s.Tests = len(s.Cases)
		for _, c := range s.Cases {
			if c.Failure != nil {
				s.Failures++
			}
			if c.Error != nil {
				s.Errors++
			}
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("JUnit XML: %w", err)
	}
	b.WriteByte('\n')
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write JUnit: %w", err)
	}
	return nil
}

// filterContainer picks the results about one container ("" for the pod-level ones).
func filterContainer(rs []Result, container string) []Result {
	var out []Result
	for _, r := range rs {
		if r.Container == container {
			out = append(out, r)
		}
	}
	return out
}

func junitCaseOf(file, name string, rs []Result, threshold Severity) junitCase {
	c := junitCase{Classname: file, Name: name}
	var failing, other []Result
	for _, r := range rs {
		if r.Fails(threshold) {
			failing = append(failing, r)
		} else {
			other = append(other, r)
		}
	}
	if len(failing) > 0 {
		var rules []string
		for _, r := range failing {
			if !slices.Contains(rules, r.Rule) {
				rules = append(rules, r.Rule)
			}
		}
		msg := failing[0].Rule + ": " + failing[0].Message
		if len(failing) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(failing)-1)
		}
		c.Failure = &junitProblem{Message: msg, Type: strings.Join(rules, ","), Text: textLines(failing)}
	}
	if len(other) > 0 {
		c.SystemOut = textLines(other)
	}
	return c
}

// textLines writes results as the text format does, ignored ones included and marked.
func textLines(rs []Result) string {
	var b bytes.Buffer
	for _, r := range rs {
		ign := ""
		if r.Ignored {
			ign = " (ignored: " + r.IgnoredBy + ")"
		}
		fmt.Fprintf(&b, "%s:%d: %s: %s: %s (%s)%s%s\n", r.File, r.Line, r.Severity, subject(r.Finding), r.Message, r.Rule,
			streamSuffix(r), ign)
	}
	return b.String()
}
