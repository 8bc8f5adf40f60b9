package config

import (
	"os"
	"strings"
	"testing"
)

// readmeOption is one option as the README's table of options documents it.
type readmeOption struct{ env, def string }

// readmeOptions reads the README's table of options: each flag with its variable and default.
// A row may document several options ("`--drain-min`, `--drain-max`"), their variables
// abbreviated after the first ("`…_MAX`") and their defaults comma-separated.
func readmeOptions(t *testing.T) map[string]readmeOption {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const header = "| flag | env | default | meaning |"
	_, table, ok := strings.Cut(string(data), header+"\n")
	if !ok {
		t.Fatalf("README.md has no table of options (a line %q)", header)
	}
	out := map[string]readmeOption{}
	for _, line := range strings.Split(table, "\n")[1:] { // [0] is the separator row
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			t.Fatalf("README options row %q has fewer than 3 cells", line)
		}
		flags, envs := codeSpans(cells[0]), codeSpans(cells[1])
		defs := splitTopLevel(strings.TrimSpace(cells[2]))
		if len(envs) != len(flags) || (len(defs) != len(flags) && len(defs) > 1) {
			t.Fatalf("README options row %q: %d flags, %d variables, %d defaults", line, len(flags), len(envs), len(defs))
		}
		for i, f := range flags {
			env := envs[i]
			if rest, ok := strings.CutPrefix(env, "…"); ok { // "…_MAX": the first variable's stem
				stem := envs[0][:strings.LastIndex(envs[0], "_")]
				env = stem + rest
			}
			def := ""
			if len(defs) == 1 {
				def = defs[0]
			} else if len(defs) > 1 {
				def = defs[i]
			}
			out[strings.TrimPrefix(f, "--")] = readmeOption{env, def}
		}
	}
	return out
}

// codeSpans returns the `code` spans in a table cell.
func codeSpans(cell string) []string {
	var out []string
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}

// splitTopLevel splits s at the ", " outside parentheses: "json (console, …), info" is two,
// "TERM,INT" one.
func splitTopLevel(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 && strings.HasPrefix(s[i:], ", ") {
				out = append(out, strings.TrimSpace(s[from:i]))
				from = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[from:]))
}

// TestREADMEOptionsTable: every option is in the README's table, under its own variable, with
// the default the code declares. A default in parentheses ("(off)", "(trigger)") describes an
// option that is unset by default; a value is the declared default (durations compared as
// durations: "0" is "0s"), and what follows it in parentheses, which qualifies it, is in the
// option's --help.
func TestREADMEOptionsTable(t *testing.T) {
	// Options unset by default whose effective value the README gives: the code decides it
	// at start (the log format by whether stderr is a terminal).
	effective := map[string]string{"log-format": "json"}
	readme := readmeOptions(t)
	for _, o := range Options() {
		r, ok := readme[o.Flag]
		if !ok {
			t.Errorf("--%s is not in the README's table of options", o.Flag)
			continue
		}
		delete(readme, o.Flag)
		if r.env != o.Env {
			t.Errorf("README: --%s's variable is %s, the code's %s", o.Flag, r.env, o.Env)
		}
		want := o.Default
		if e, ok := effective[o.Flag]; ok && want == "" {
			want = e
		}
		got := r.def
		if strings.HasPrefix(got, "(") {
			got = "" // described, not a value
		} else if v, qual, ok := strings.Cut(got, " ("); ok {
			got = v
			// What qualifies the default is in --help too, which users read instead.
			if qual = strings.TrimSuffix(qual, ")"); !strings.Contains(o.Help, qual) {
				t.Errorf("README: --%s defaults to %s (%s); --help does not say %q", o.Flag, v, qual, qual)
			}
		}
		if got == want {
			continue
		}
		gd, err1 := ParseDuration(got)
		wd, err2 := ParseDuration(want)
		if err1 != nil || err2 != nil || gd != wd {
			t.Errorf("README: --%s defaults to %q, the code to %q", o.Flag, r.def, o.Default)
		}
	}
	for f := range readme {
		t.Errorf("the README's table of options has --%s, which is no option", f)
	}
}
