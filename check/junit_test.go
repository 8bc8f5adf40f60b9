package check

import (
	"bytes"
	"encoding/xml"
	"testing"
)

// The JUnit document as encoding/xml wrote it before this package wrote its own: the reference
// junitSuites.xml is compared with.
type (
	refSuites struct {
		XMLName  xml.Name   `xml:"testsuites"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Errors   int        `xml:"errors,attr"`
		Suites   []refSuite `xml:"testsuite"`
	}
	refSuite struct {
		Name     string    `xml:"name,attr"`
		Tests    int       `xml:"tests,attr"`
		Failures int       `xml:"failures,attr"`
		Errors   int       `xml:"errors,attr"`
		Skipped  int       `xml:"skipped,attr"`
		Cases    []refCase `xml:"testcase"`
	}
	refCase struct {
		Classname string      `xml:"classname,attr"`
		Name      string      `xml:"name,attr"`
		Failure   *refProblem `xml:"failure,omitempty"`
		Error     *refProblem `xml:"error,omitempty"`
		SystemOut string      `xml:"system-out,omitempty"`
	}
	refProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

func (s junitSuites) ref() refSuites {
	out := refSuites{Name: s.Name, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors}
	problem := func(p *junitProblem) *refProblem {
		if p == nil {
			return nil
		}
		return &refProblem{p.Message, p.Type, p.Text}
	}
	for _, su := range s.Suites {
		rs := refSuite{Name: su.Name, Tests: su.Tests, Failures: su.Failures, Errors: su.Errors, Skipped: su.Skipped}
		for _, c := range su.Cases {
			rs.Cases = append(rs.Cases, refCase{c.Classname, c.Name, problem(c.Failure), problem(c.Error), c.SystemOut})
		}
		out.Suites = append(out.Suites, rs)
	}
	return out
}

func refXML(t *testing.T, s junitSuites) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(s.ref()); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n")
	return b.Bytes()
}

// The document is byte for byte what encoding/xml writes, whatever the text in it (markup,
// quotes, newlines, control characters, invalid UTF-8), and whichever elements are present:
// a testcase with a failure, an error, both or neither, with and without system-out, a suite
// without testcases, no suite at all.
func FuzzJUnitXML(f *testing.F) {
	for _, seed := range [][2]string{
		{`Deployment "web" container "app"`, "grace-short: the stop sequence needs 40s\nof 30s"},
		{"a <b> & 'c'", "\t\r\n"},
		{"\x00\x1f\x7f", "\xff\xfe invalid"},
		{"\uFFFD é ✓ 𝄞", "\ufffe\uffff"},
		{"", ""},
	} {
		f.Add(seed[0], seed[1], uint8(0))
		f.Add(seed[0], seed[1], uint8(0xff))
	}
	f.Fuzz(func(t *testing.T, name, text string, shape uint8) {
		p := &junitProblem{Message: name, Type: text, Text: text + name}
		c := junitCase{Classname: text, Name: name}
		if shape&1 != 0 {
			c.Failure = p
		}
		if shape&2 != 0 {
			c.Error = p
		}
		if shape&4 != 0 {
			c.SystemOut = text
		}
		s := junitSuites{Name: name, Tests: int(shape), Failures: 1, Errors: -2}
		if shape&8 == 0 {
			s.Suites = []junitSuite{{Name: text, Cases: []junitCase{c, {Name: name}}}}
			if shape&16 != 0 {
				s.Suites = append(s.Suites, junitSuite{Name: "empty", Skipped: 3})
			}
		}
		if got, want := s.xml(), refXML(t, s); !bytes.Equal(got, want) {
			t.Errorf("JUnit XML differs from encoding/xml's:\ngot:\n%s\nwant:\n%s", got, want)
		}
	})
}
