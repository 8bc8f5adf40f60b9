package check

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/drainit/drainit/integration/testenv"
)

// formatCase is one input checked in every format, each compared with its golden file in
// testdata/golden (go test -update rewrites them).
type formatCase struct {
	name      string
	args      []string
	stdin     string // a file whose text is standard input, for args "-"
	ignore    []string
	threshold Severity
}

var formatCases = []formatCase{
	// The example manifests of the README: no finding, so every format's empty case.
	{name: "examples", args: []string{"../examples/kubernetes"}, threshold: Error},
	// A repository: findings, ignores by annotation (object and pod template) and by flag, an
	// unknown id in an annotation, and a broken manifest.
	{name: "tree", args: []string{"testdata/tree"}, ignore: []string{RuleGraceZero}, threshold: Warning},
	// helm template's output on standard input: documents, "# Source:" paths.
	{name: "helm-stream", args: []string{"-"}, stdin: "testdata/streams/helm.yaml", threshold: Error},
}

// sarifOptions pin what depends on the machine: the version and the working directory's URI.
// The working directory is the repository's root, as in CI.
func sarifOptions(t *testing.T) SARIFOptions {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return SARIFOptions{Version: "test", WorkDir: root, WorkDirURI: "file:///src/"}
}

// run reads a case's input and evaluates it.
func (c formatCase) run(t *testing.T) (*Inputs, []Result) {
	t.Helper()
	var stdin io.Reader
	if c.stdin != "" {
		data, err := os.ReadFile(c.stdin)
		if err != nil {
			t.Fatal(err)
		}
		stdin = bytes.NewReader(data)
	}
	in, err := ReadInputs(c.args, stdin, ReadOptions{Ignore: c.ignore, Templates: true})
	if err != nil {
		t.Fatal(err)
	}
	return in, in.Results
}

// render writes a case in one format.
func (c formatCase) render(t *testing.T, format string) []byte {
	t.Helper()
	in, rs := c.run(t)
	var out bytes.Buffer
	var err error
	switch format {
	case "txt":
		err = WriteTextResults(&out, rs)
	case "json":
		err = WriteJSON(&out, BuildReport(in))
	case "sarif":
		err = WriteSARIF(&out, rs, in.Problems, sarifOptions(t))
	case "junit.xml":
		err = WriteJUnit(&out, in.Templates, rs, in.Problems, c.threshold)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestGoldenFormats pins every format's output for every case.
func TestGoldenFormats(t *testing.T) {
	if filepath.Separator != '/' {
		testenv.SkipElsewhere(t, "the golden files hold slash-separated paths")
	}
	for _, c := range formatCases {
		for _, format := range []string{"txt", "json", "sarif", "junit.xml"} {
			t.Run(c.name+"."+format, func(t *testing.T) {
				golden(t, filepath.Join("testdata/golden", c.name+"."+format), c.render(t, format))
			})
		}
	}
}

// compileSARIFSchema compiles the SARIF 2.1.0 JSON schema of the OASIS SARIF TC, kept in testdata as
// published (see testdata/sarif-schema-2.1.0.md), with format assertions on: uri and
// uri-reference are checked too.
func compileSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-schema-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile the SARIF schema: %v", err)
	}
	return sch
}

func validateSARIF(sch *jsonschema.Schema, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// TestSARIFSchema: drainit's SARIF validates against the SARIF 2.1.0 schema, for every case and
// for a log with every rule firing; and the validator is not a rubber stamp: logs broken in
// ways code scanning would refuse are rejected.
func TestSARIFSchema(t *testing.T) {
	sch := compileSARIFSchema(t)
	for _, c := range formatCases {
		if err := validateSARIF(sch, c.render(t, "sarif")); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	var every []Result
	for i, r := range Rules() {
		every = append(every, Result{Finding: Finding{File: "k8s/x.yaml", Line: i + 1, Severity: r.Severity, Rule: r.ID,
			Kind: "Deployment", Name: "x", Container: "c", Message: "m"}})
	}
	every[0].Document, every[0].Source = 2, "chart/templates/a b.yaml" // a stream, a path to escape
	every[1].Ignored, every[1].suppressions = true, []suppression{{byAnnotation: true, line: 3}, {}}
	var out bytes.Buffer
	problems := []Problem{{File: "k8s/broken.yaml", Line: 4, Message: "not valid YAML"}, {File: "/elsewhere/x.yaml", Message: "cannot read"}}
	if err := WriteSARIF(&out, every, problems, sarifOptions(t)); err != nil {
		t.Fatal(err)
	}
	if err := validateSARIF(sch, out.Bytes()); err != nil {
		t.Errorf("every rule: %v\n%s", err, out.Bytes())
	}
	for name, breakIt := range map[string]func(string) string{
		"level":        func(s string) string { return strings.Replace(s, `"level": "error"`, `"level": "fatal"`, 1) },
		"tool name":    func(s string) string { return strings.Replace(s, `"name": "drainit",`, "", 1) },
		"start line 0": func(s string) string { return strings.Replace(s, `"startLine": 1`, `"startLine": 0`, 1) },
		"version":      func(s string) string { return strings.Replace(s, `"version": "2.1.0"`, `"version": "2.2"`, 1) },
		"suppression":  func(s string) string { return strings.Replace(s, `"kind": "inSource"`, `"kind": "inline"`, 1) },
	} {
		broken := breakIt(out.String())
		if broken == out.String() {
			t.Fatalf("%s: the breakage did not apply", name)
		}
		if validateSARIF(sch, []byte(broken)) == nil {
			t.Errorf("a log with a broken %s validates: the schema check proves nothing", name)
		}
	}
}

// TestSARIFForCodeScanning checks what the schema leaves open but GitHub code scanning needs:
// each result names a rule of the driver by id and index, has a location with a URI relative to
// the repository for a file below the working directory, and a start line; rules carry help.
func TestSARIFForCodeScanning(t *testing.T) {
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Name, InformationURI, Version string
					Rules                         []struct {
						ID                   string
						ShortDescription     struct{ Text string }
						FullDescription      struct{ Text string }
						Help                 struct{ Text, Markdown string }
						DefaultConfiguration struct{ Level string }
					}
				}
			}
			Invocations []struct {
				ExecutionSuccessful        bool
				ToolExecutionNotifications []struct{ Level string }
			}
			OriginalURIBaseIDs map[string]struct{ URI string } `json:"originalUriBaseIds"`
			Results            []struct {
				RuleID    string
				RuleIndex int
				Level     string
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string
							URIBaseID string `json:"uriBaseId"`
						}
						Region *struct{ StartLine int }
					}
				}
				Suppressions []struct{ Kind, Justification string }
			}
		}
	}
	tree := formatCases[1]
	if err := json.Unmarshal(tree.render(t, "sarif"), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	d := run.Tool.Driver
	if d.Name != "drainit" || d.InformationURI != "https://github.com/drainit/drainit" || d.Version != "test" || len(d.Rules) != len(Rules()) {
		t.Fatalf("driver: %+v", d)
	}
	for i, r := range d.Rules {
		if r.ID != Rules()[i].ID || r.ShortDescription.Text == "" || r.FullDescription.Text == "" || r.Help.Text == "" ||
			!strings.Contains(r.Help.Markdown, "**Fix:**") || r.DefaultConfiguration.Level == "" {
			t.Errorf("rule %d: %+v", i, r)
		}
	}
	if run.OriginalURIBaseIDs["%SRCROOT%"].URI != "file:///src/" {
		t.Errorf("originalUriBaseIds: %+v", run.OriginalURIBaseIDs)
	}
	if inv := run.Invocations[0]; inv.ExecutionSuccessful || len(inv.ToolExecutionNotifications) != 1 {
		t.Errorf("the broken manifest must make the run unsuccessful, with one notification: %+v", inv)
	}
	suppressed := map[string]string{}
	for _, r := range run.Results {
		if r.RuleIndex < 0 || d.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %s: ruleIndex %d", r.RuleID, r.RuleIndex)
		}
		loc := r.Locations[0].PhysicalLocation
		if !strings.HasPrefix(loc.ArtifactLocation.URI, "check/testdata/tree/") || loc.ArtifactLocation.URIBaseID != "%SRCROOT%" ||
			loc.Region == nil || loc.Region.StartLine < 1 {
			t.Errorf("result %s: location %+v", r.RuleID, loc)
		}
		for _, s := range r.Suppressions {
			suppressed[r.RuleID] += s.Kind + " "
		}
	}
	want := map[string]string{RuleNoDrain: "inSource ", RuleSpringDuration: "inSource ", RuleGraceZero: "external "}
	if len(suppressed) != len(want) {
		t.Errorf("suppressions: %v, want %v", suppressed, want)
	}
	for k, v := range want {
		if suppressed[k] != v {
			t.Errorf("suppressions: %v, want %v", suppressed, want)
		}
	}
}

// TestJUnitStructure: one testsuite per file, a testcase per pod template and per container;
// a testcase fails exactly when it has a finding at or above the threshold, and the totals add
// up.
func TestJUnitStructure(t *testing.T) {
	type tcase struct {
		Name    string `xml:"name,attr"`
		Failure *struct {
			Message string `xml:"message,attr"`
			Type    string `xml:"type,attr"`
		} `xml:"failure"`
		Error     *struct{} `xml:"error"`
		SystemOut string    `xml:"system-out"`
	}
	type junitDoc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name     string  `xml:"name,attr"`
			Tests    int     `xml:"tests,attr"`
			Failures int     `xml:"failures,attr"`
			Errors   int     `xml:"errors,attr"`
			Cases    []tcase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	for _, threshold := range []Severity{Error, Warning, Info} {
		c := formatCases[1]
		c.threshold = threshold
		var doc junitDoc
		if err := xml.Unmarshal(c.render(t, "junit.xml"), &doc); err != nil {
			t.Fatal(err)
		}
		in, rs := c.run(t)
		wantCases := 0
		for _, w := range in.Templates {
			wantCases += 1 + len(w.Containers)
		}
		tests, failures, errs := 0, 0, 0
		failed := map[string]bool{}
		for _, s := range doc.Suites {
			f, e := 0, 0
			for _, tc := range s.Cases {
				if tc.Failure != nil {
					f++
					failed[s.Name+" "+tc.Name] = true
				}
				if tc.Error != nil {
					e++
				}
			}
			if s.Tests != len(s.Cases) || s.Failures != f || s.Errors != e {
				t.Errorf("suite %s: tests %d failures %d errors %d, counted %d %d %d", s.Name, s.Tests, s.Failures, s.Errors, len(s.Cases), f, e)
			}
			tests, failures, errs = tests+s.Tests, failures+f, errs+e
		}
		if doc.Tests != tests || doc.Failures != failures || doc.Errors != errs {
			t.Errorf("totals %d %d %d, counted %d %d %d", doc.Tests, doc.Failures, doc.Errors, tests, failures, errs)
		}
		if tests != wantCases+len(in.Problems) || errs != len(in.Problems) {
			t.Errorf("%d testcases and %d errors, want %d pod templates and containers plus %d problems", tests, errs, wantCases, len(in.Problems))
		}
		wantFailed := map[string]bool{}
		for _, r := range rs {
			if r.Fails(threshold) {
				w := in.Templates[r.workload]
				name := w.File + " " + w.Kind + ` "` + w.Name + `"`
				if r.Container != "" {
					name += ` container "` + r.Container + `"`
				}
				wantFailed[name] = true
			}
		}
		if len(failed) != len(wantFailed) {
			t.Errorf("threshold %s: failed %v, want %v", threshold, failed, wantFailed)
		}
		for k := range wantFailed {
			if !failed[k] {
				t.Errorf("threshold %s: %s should fail; failed %v", threshold, k, failed)
			}
		}
	}
}

// TestSARIFSchemaIsThePublishedOne: the schema in testdata is the OASIS TC's file, unedited
// (testdata/sarif-schema-2.1.0.md says where it comes from).
func TestSARIFSchemaIsThePublishedOne(t *testing.T) {
	data, err := os.ReadFile("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if len(data) != 112318 || hex.EncodeToString(sum[:]) != "80cd7ffb9b62a4162d541aa9170862dd264f6cce0f04c57f1ac9f2337b808958" {
		t.Errorf("testdata/sarif-schema-2.1.0.json is not the published schema (%d bytes, sha256 %x)", len(data), sum)
	}
}
