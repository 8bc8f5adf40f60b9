package check

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseRuleList(t *testing.T) {
	for in, want := range map[string][]string{
		"no-drain":                          {"no-drain"},
		"no-drain,spring-duration":          {"no-drain", "spring-duration"},
		" No-Drain ,  SPRING-duration ":     {"no-drain", "spring-duration"},
		",,no-drain,,":                      {"no-drain"},
		"no-drain,no-drain":                 {"no-drain"},
		"":                                  nil,
		" , ":                               nil,
		"grace-zero, not-a-rule,grace-zero": {"grace-zero", "not-a-rule"},
		// A renamed rule's old id is its new one.
		"Stop-Signal-Image-Quit":                   {"stop-signal-image"},
		"stop-signal-image-quit,stop-signal-image": {"stop-signal-image"},
	} {
		if got := ParseRuleList(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseRuleList(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseRuleList: any annotation value splits into clean ids, and splitting the ids joined
// again gives the same ids.
func FuzzParseRuleList(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		ids := ParseRuleList(s)
		seen := map[string]bool{}
		for _, id := range ids {
			if id == "" || strings.Contains(id, ",") || strings.TrimSpace(id) != id || seen[id] {
				t.Fatalf("ParseRuleList(%q) gave %q", s, ids)
			}
			seen[id] = true
		}
		if again := ParseRuleList(strings.Join(ids, ",")); !reflect.DeepEqual(again, ids) {
			t.Fatalf("ParseRuleList(%q) = %q, but its ids joined parse to %q", s, ids, again)
		}
	})
}

const annotated = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  annotations:
    drainit.io/ignore: "no-drain, Not-A-Rule"
spec:
  template:
    metadata:
      annotations:
        drainit.io/ignore: spring-duration
    spec:
      containers:
        - name: api
          image: api:1
        - name: worker
          image: worker:1
          env:
            - name: SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE
              value: "20"
          lifecycle:
            preStop:
              sleep: {seconds: 5}
`

func evaluated(t *testing.T, manifest string, ignore ...string) []Result {
	t.Helper()
	ws, err := Read("a.yaml", strings.NewReader(manifest))
	if err != nil {
		t.Fatal(err)
	}
	return Evaluate(ws, ignore)
}

// summarize writes results as rule@line(ignored-by), for comparisons.
func summarize(rs []Result) string {
	var out []string
	for _, r := range rs {
		s := r.Rule + "@" + strconv.Itoa(r.Line)
		if r.Ignored {
			s += "(" + r.IgnoredBy + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestIgnoreAnnotation: the annotation on the object and on the pod template both count; an
// unknown id is a warning at the annotation's line; ignored results are kept and marked.
func TestIgnoreAnnotation(t *testing.T) {
	rs := evaluated(t, annotated)
	want := "ignore-annotation@6 no-drain@14(annotation) spring-duration@19(annotation)"
	if got := summarize(rs); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if !strings.Contains(rs[0].Message, `"not-a-rule"`) || rs[0].Severity != Warning {
		t.Errorf("unknown id: %+v", rs[0])
	}
	if c := CountResults(rs); c != (Counts{Warnings: 1, Ignored: 2}) {
		t.Errorf("counts %+v", c)
	}
	if Failing(rs, Error) != 0 || Failing(rs, Warning) != 1 || Failing(rs, Info) != 1 {
		t.Errorf("ignored results must never fail the check")
	}
	// SARIF tells the two annotations apart.
	if s := rs[2].suppressions; len(s) != 1 || !s[0].byAnnotation || !s[0].template || s[0].line != 11 {
		t.Errorf("pod template annotation: %+v", s)
	}
	if s := rs[1].suppressions; len(s) != 1 || !s[0].byAnnotation || s[0].template || s[0].line != 6 {
		t.Errorf("object annotation: %+v", s)
	}
}

// TestIgnoreFlag: --ignore ignores a rule everywhere, the annotation's warning included; with
// both, the annotation is named first and both are kept.
func TestIgnoreFlag(t *testing.T) {
	rs := evaluated(t, annotated, RuleIgnoreAnnotation, RuleNoDrain)
	want := "ignore-annotation@6(flag) no-drain@14(annotation) spring-duration@19(annotation)"
	if got := summarize(rs); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if s := rs[1].suppressions; len(s) != 2 || !s[0].byAnnotation || s[1].byAnnotation {
		t.Errorf("ignored twice over: %+v", s)
	}
	// Without any ignore, the same manifest minus its annotations reports everything.
	plain := strings.ReplaceAll(annotated, "drainit.io/ignore", "example.com/other")
	if got := summarize(evaluated(t, plain)); got != "no-drain@14 spring-duration@19" {
		t.Errorf("without annotations: %s", got)
	}
}

// TestIgnoreRenamedRule: an ignore written for stop-signal-image-quit, the rule's id until it
// took httpd and haproxy too, still ignores it, by annotation and by flag, with no warning that
// it names no rule.
func TestIgnoreRenamedRule(t *testing.T) {
	const m = `apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    drainit.io/ignore: stop-signal-image-quit
spec:
  containers:
    - name: web
      image: nginx:1.27
      command: [/drainit, --, nginx]
`
	if got := summarize(evaluated(t, m)); got != "stop-signal-image@10(annotation)" {
		t.Errorf("by annotation: %s", got)
	}
	plain := strings.ReplaceAll(m, "drainit.io/ignore", "example.com/other")
	if got := summarize(evaluated(t, plain, ParseRuleList("stop-signal-image-quit")...)); got != "stop-signal-image@10(flag)" {
		t.Errorf("by flag: %s", got)
	}
}

// TestIgnoreAnnotationShapes: the annotation is read like every field: a value of the wrong
// shape is an error naming its path and line; annotations without it change nothing.
func TestIgnoreAnnotationShapes(t *testing.T) {
	bad := strings.Replace(annotated, `drainit.io/ignore: "no-drain, Not-A-Rule"`, "drainit.io/ignore: [no-drain]", 1)
	_, err := Read("a.yaml", strings.NewReader(bad))
	var re *ReadError
	if !errors.As(err, &re) || re.Line != 6 || !strings.Contains(re.Msg, "metadata.annotations.drainit.io/ignore: want a string") {
		t.Errorf("list value: %v", err)
	}
	bad = strings.Replace(annotated, "  annotations:\n    drainit.io", "  annotations: oops\n  x:\n    drainit.io", 1)
	if _, err := Read("a.yaml", strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "metadata.annotations: want a mapping") {
		t.Errorf("annotations not a mapping: %v", err)
	}
	ws, err := Read("a.yaml", strings.NewReader("kind: Pod\nmetadata:\n  annotations: {other: x}\nspec:\n  containers: [{name: c}]\n"))
	if err != nil || len(ws) != 1 || ws[0].Ignores != nil {
		t.Errorf("no ignore annotation: %+v, %v", ws, err)
	}
	// A Pod's template is the Pod: its annotation is read once.
	ws, _ = Read("a.yaml", strings.NewReader("kind: Pod\nmetadata:\n  annotations: {drainit.io/ignore: no-drain}\nspec:\n  containers: [{name: c}]\n"))
	if len(ws) != 1 || len(ws[0].Ignores) != 1 || ws[0].Ignores[0].OnTemplate || ws[0].Ignores[0].Line != 3 {
		t.Errorf("Pod annotation: %+v", ws)
	}
}
