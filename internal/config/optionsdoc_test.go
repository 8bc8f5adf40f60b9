package config

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the table of options in docs/options.md from the code")

// The markers around the generated table in docs/options.md.
const (
	optionsDoc      = "../../docs/options.md"
	optionsDocBegin = "<!-- options: generated from internal/config's Raw; go test ./internal/config -run TestOptionsDoc -update rewrites it -->\n"
	optionsDocEnd   = "<!-- end of options -->\n"
)

// optionsMarkdown is the table of options, as docs/options.md holds it: each option's flag,
// variable, default, what giving it twice does and its --help text, in Raw's order.
func optionsMarkdown() string {
	var b strings.Builder
	b.WriteString("| flag | variable | default | given twice | what it does |\n| --- | --- | --- | --- | --- |\n")
	for _, o := range Options() {
		def := "none"
		if o.Default != "" {
			def = "`" + o.Default + "`"
		}
		twice := map[Repeat]string{RepeatLast: "the last wins", RepeatAdd: "adds up", RepeatRefuse: "refused"}[o.Repeat]
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s | %s |\n", o.Flag, o.Env, def, twice, strings.ReplaceAll(o.Help, "|", `\|`))
	}
	return b.String()
}

// TestOptionsDoc: docs/options.md's table is the code's options, so that it cannot drift: an
// option added, removed, renamed or given another default or help fails here until the table is
// rewritten (-update).
func TestOptionsDoc(t *testing.T) {
	data, err := os.ReadFile(optionsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, optionsDocBegin), strings.Index(doc, optionsDocEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no table of options between %q and %q", optionsDoc, optionsDocBegin, optionsDocEnd)
	}
	got, want := doc[i+len(optionsDocBegin):j], optionsMarkdown()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(optionsDoc, []byte(doc[:i+len(optionsDocBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of options differs from the code's (go test ./internal/config -run TestOptionsDoc -update rewrites it)\n--- docs\n%s--- code\n%s", optionsDoc, got, want)
}

// TestOptionsMarkdown: the table has a row per option, each with its flag, variable and default.
func TestOptionsMarkdown(t *testing.T) {
	rows := strings.Split(strings.TrimSuffix(optionsMarkdown(), "\n"), "\n")[2:]
	if len(rows) != len(Options()) {
		t.Fatalf("%d rows for %d options", len(rows), len(Options()))
	}
	for k, o := range Options() {
		if !strings.HasPrefix(rows[k], "| `--"+o.Flag+"` | `"+o.Env+"` | ") {
			t.Errorf("row %d: %q, want --%s and %s first", k, rows[k], o.Flag, o.Env)
		}
	}
	if !strings.Contains(rows[0], "| `30s` |") {
		t.Errorf("--grace-period's row %q does not give its default 30s", rows[0])
	}
}
