package check

// JUnit XML output, for CI systems that show test reports (GitLab, Jenkins, Azure Pipelines):
// one testsuite per file, one testcase per pod template (its pod-level rules) and one per
// container. A testcase fails when it has a finding at or above the severity threshold, the
// findings that make the exit status 1, so the report and the exit status agree. Findings
// below the threshold, and ignored ones, do not fail it: they are in the testcase's
// <system-out>, where the CI shows them beside the passing test. A file that could not be
// checked is a testsuite whose one testcase is an <error>.
//
// The XML is written here, not by encoding/xml: this package is linked into drainit, which
// initialises every linked package before it starts its app, and encoding/xml's initialisation
// builds its HTML entity tables (18.8 KiB, kept for good in an idle drainit) for a subcommand
// that a container never runs. The output is what encoding/xml's Encoder, indented by two
// spaces, wrote (FuzzJUnitXML compares the two).

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

type junitSuites struct {
	Name     string
	Tests    int
	Failures int
	Errors   int
	Suites   []junitSuite
}

type junitSuite struct {
	Name     string
	Tests    int
	Failures int
	Errors   int
	Skipped  int
	Cases    []junitCase
}

type junitCase struct {
	Classname string
	Name      string
	Failure   *junitProblem // omitted when nil
	Error     *junitProblem // omitted when nil
	SystemOut string        // omitted when empty
}

type junitProblem struct {
	Message string
	Type    string
	Text    string
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
	// The case names of each file so far: a set kept as cases are added, not rebuilt for each
	// template, which made a file of many templates quadratic.
	caseNames := map[string]map[string]bool{}
	byWorkload := make([][]Result, len(ws))
	for _, r := range rs {
		if r.workload >= 0 && r.workload < len(ws) {
			byWorkload[r.workload] = append(byWorkload[r.workload], r)
		}
	}
	for i := range ws {
		wl := &ws[i]
		s := suite(wl.File)
		names := caseNames[wl.File]
		if names == nil {
			names = map[string]bool{}
			caseNames[wl.File] = names
		}
		object := fmt.Sprintf("%s %q", wl.Kind, wl.Name)
		if wl.Document > 0 {
			object += streamSuffix(Result{Document: wl.Document, Source: wl.Source})
		}
		if names[object] { // the same kind and name twice in a file: the line tells them apart
			object += fmt.Sprintf(" (line %d)", wl.Line)
		}
		s.Cases = append(s.Cases, junitCaseOf(wl.File, object, filterContainer(byWorkload[i], ""), threshold))
		names[object] = true
		for _, c := range wl.Containers {
			name := fmt.Sprintf("%s container %q", object, c)
			s.Cases = append(s.Cases, junitCaseOf(wl.File, name, filterContainer(byWorkload[i], c), threshold))
			names[name] = true
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
	if _, err := w.Write(out.xml()); err != nil {
		return fmt.Errorf("write JUnit: %w", err)
	}
	return nil
}

// xml is the document: the XML declaration, the elements indented by two spaces, a newline.
func (out junitSuites) xml() []byte {
	var x xmlWriter
	x.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	itoa := strconv.Itoa
	x.start("testsuites", "name", out.Name, "tests", itoa(out.Tests), "failures", itoa(out.Failures), "errors", itoa(out.Errors))
	for _, s := range out.Suites {
		x.start("testsuite", "name", s.Name, "tests", itoa(s.Tests), "failures", itoa(s.Failures), "errors", itoa(s.Errors),
			"skipped", itoa(s.Skipped))
		for _, c := range s.Cases {
			x.start("testcase", "classname", c.Classname, "name", c.Name)
			for _, p := range []struct {
				tag string
				p   *junitProblem
			}{{"failure", c.Failure}, {"error", c.Error}} {
				if p.p != nil {
					x.start(p.tag, "message", p.p.Message, "type", p.p.Type)
					x.text(p.p.Text)
					x.end(p.tag)
				}
			}
			if c.SystemOut != "" {
				x.start("system-out")
				x.text(c.SystemOut)
				x.end("system-out")
			}
			x.end("testcase")
		}
		x.end("testsuite")
	}
	x.end("testsuites")
	x.b.WriteByte('\n')
	return x.b.Bytes()
}

// xmlWriter writes elements as encoding/xml's Encoder does with Indent("", "  "): each start
// tag on a line of its own, indented by its depth; an end tag on the same line as its start
// tag when the element holds no element (text or nothing), on a line of its own otherwise.
type xmlWriter struct {
	b       bytes.Buffer
	depth   int
	started bool // a start tag has been written: the next one goes on a new line
	inner   bool // the last tag written is a start tag: the element holds no element yet
}

func (x *xmlWriter) indent() {
	if x.started {
		x.b.WriteByte('\n')
	}
	x.started = true
	for range x.depth {
		x.b.WriteString("  ")
	}
}

// start writes <tag name="value" ...>; attrs are name, value pairs.
func (x *xmlWriter) start(tag string, attrs ...string) {
	x.indent()
	x.b.WriteString("<" + tag)
	for i := 0; i+1 < len(attrs); i += 2 {
		x.b.WriteString(" " + attrs[i] + `="`)
		xmlEscape(&x.b, attrs[i+1])
		x.b.WriteByte('"')
	}
	x.b.WriteByte('>')
	x.depth++
	x.inner = true
}

// text writes character data inside the element just started.
func (x *xmlWriter) text(s string) { xmlEscape(&x.b, s) }

func (x *xmlWriter) end(tag string) {
	x.depth--
	if !x.inner {
		x.indent()
	}
	x.inner = false
	x.b.WriteString("</" + tag + ">")
}

// xmlEscape writes s as XML text or an attribute's value, as encoding/xml's EscapeText does:
// the five markup characters and tab, newline and carriage return as character references, and
// what XML cannot hold (control characters, invalid UTF-8) as U+FFFD.
func xmlEscape(b *bytes.Buffer, s string) {
	last := 0
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		i += width
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if xmlChar(r) && !(r == utf8.RuneError && width == 1) {
				continue
			}
			esc = "\uFFFD"
		}
		b.WriteString(s[last : i-width])
		b.WriteString(esc)
		last = i
	}
	b.WriteString(s[last:])
}

// xmlChar says whether XML 1.0 can hold r (its Char production).
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
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
			if !contains(rules, r.Rule) {
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
