package check

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// ruleConstants parses the package's Go files (tests left out) and returns every constant
// named Rule<Upper>… with its string value, wherever it is declared: a rule added in a new file
// is found as well as one added to check.go's list.
func ruleConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^Rule[A-Z]`)
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !name.MatchString(id.Name) {
						continue
					}
					if i >= len(vs.Values) {
						t.Errorf("%s: %s has no value of its own", fset.Position(id.Pos()), id.Name)
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal: the registry test cannot read it", fset.Position(id.Pos()), id.Name)
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[id.Name] = v
				}
			}
		}
	}
	return out
}

// TestRegistryCoversEveryRule: every Rule* constant in the package has metadata in the
// registry (SARIF's rules, --help, the README's table, --ignore's validation all read it), and
// every registry entry is a rule that exists.
func TestRegistryCoversEveryRule(t *testing.T) {
	consts := ruleConstants(t)
	if len(consts) < 14 {
		t.Fatalf("found %d Rule constants, want at least the 14 this test was written with: is the parsing broken?", len(consts))
	}
	names := make([]string, 0, len(consts))
	for name := range consts {
		names = append(names, name)
	}
	sort.Strings(names)
	ids := map[string]bool{}
	for _, name := range names {
		id := consts[name]
		ids[id] = true
		if _, ok := LookupRule(id); !ok {
			t.Errorf("%s = %q has no entry in the rule registry (rules.go): add its id, severity, what it catches and the fix", name, id)
		}
	}
	for _, r := range Rules() {
		if !ids[r.ID] {
			t.Errorf("registry entry %q is no Rule constant's value", r.ID)
		}
	}
}

// TestRegistryEntries: each entry is complete, its id unique and well-formed, its severity one
// of the three.
func TestRegistryEntries(t *testing.T) {
	seen := map[string]bool{}
	idForm := regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("rule %q registered twice", r.ID)
		}
		seen[r.ID] = true
		if !idForm.MatchString(r.ID) {
			t.Errorf("rule id %q: want lower-case words joined by dashes", r.ID)
		}
		if _, err := ParseSeverity(string(r.Severity)); err != nil {
			t.Errorf("rule %q: severity %q", r.ID, r.Severity)
		}
		if r.Short == "" || r.Catches == "" || r.Fix == "" {
			t.Errorf("rule %q: short description, what it catches and the fix must all be written", r.ID)
		}
		if strings.HasSuffix(r.Short, ".") || !strings.HasSuffix(r.Catches, ".") || !strings.HasSuffix(r.Fix, ".") {
			t.Errorf("rule %q: Short is a phrase without a period; Catches and Fix are sentences ending in one", r.ID)
		}
		if strings.ContainsAny(r.Short+r.Catches+r.Fix+r.Mixed, "\n") {
			t.Errorf("rule %q: metadata must be single lines (a table cell, a SARIF text)", r.ID)
		}
	}
}

// TestRulesMarkdownGolden pins docs/check.md's table of rules as generated from the registry.
func TestRulesMarkdownGolden(t *testing.T) {
	golden(t, "testdata/golden/rules-table.md", []byte(RulesMarkdown()))
}

// docs/check.md's markers around the table of rules.
const (
	readmeBegin = "<!-- drainit check rules: generated from check/rules.go -->\n"
	readmeEnd   = "<!-- end of drainit check rules -->\n"
)

// readmeTable returns what docs/check.md holds between the markers, and whether it has them.
func readmeTable(readme string) (string, bool) {
	i, j := strings.Index(readme, readmeBegin), strings.Index(readme, readmeEnd)
	if i < 0 || j < i+len(readmeBegin) {
		return "", false
	}
	return readme[i+len(readmeBegin) : j], true
}

// TestREADMERulesTable: docs/check.md's table of rules is the registry's, between its markers, so
// that a rule's documentation cannot drift from the rule.
func TestREADMERulesTable(t *testing.T) {
	data, err := os.ReadFile("../docs/check.md")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := readmeTable(string(data))
	if !ok {
		t.Fatalf("docs/check.md has no table of rules between %q and %q: paste check/testdata/golden/rules-table.md there", readmeBegin, readmeEnd)
	}
	if got != RulesMarkdown() {
		t.Errorf("docs/check.md's table of rules differs from the registry: replace it with check/testdata/golden/rules-table.md (go test -update rewrites that file)\n--- README\n%s--- registry\n%s", got, RulesMarkdown())
	}
}

// TestReadmeTable: the markers are found where they are, and a README without them, or with
// them swapped, has no table.
func TestReadmeTable(t *testing.T) {
	if got, ok := readmeTable("intro\n" + readmeBegin + "| a |\n" + readmeEnd + "rest\n"); !ok || got != "| a |\n" {
		t.Errorf("got %q, %v", got, ok)
	}
	for _, s := range []string{"no markers\n", readmeEnd + readmeBegin, readmeBegin + "| a |\n"} {
		if _, ok := readmeTable(s); ok {
			t.Errorf("%q has no table", s)
		}
	}
}

// TestRulesHelp: --help lists every rule, one line each.
func TestRulesHelp(t *testing.T) {
	help := RulesHelp()
	lines := strings.Split(strings.TrimSuffix(help, "\n"), "\n")
	if len(lines) != len(Rules()) {
		t.Fatalf("%d lines for %d rules:\n%s", len(lines), len(Rules()), help)
	}
	for i, r := range Rules() {
		if f := strings.Fields(lines[i]); len(f) < 3 || f[0] != r.ID || f[1] != string(r.Severity) {
			t.Errorf("line %d: %q, want the id %s and severity %s first", i, lines[i], r.ID, r.Severity)
		}
	}
}
