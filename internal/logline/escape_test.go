package logline

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestEscape: plain text, quotes included, is kept as it is; anything that would break the line
// or drive a terminal is escaped, and then quotes and backslashes too, so that the escapes can
// be told from text.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		`URL "ftp://x": no`:         `URL "ftp://x": no`,
		"naïve – ok":                "naïve – ok",
		"--grace-period\r":          `--grace-period\r`,
		"a\nb":                      `a\nb`,
		"\x1b]0;pwned\x07 \"x\" \\": `\x1b]0;pwned\a \"x\" \\`,
		"right\u202eleft":           `right\u202eleft`,
		"line\u2028sep":             `line\u2028sep`,
		"bad \xff byte":             `bad \xff byte`,
		"tab\there":                 `tab\there`,
		"":                          "",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEscape: whatever the input, the result is valid UTF-8 of graphic characters only: one line,
// nothing a terminal acts on.
func FuzzEscape(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) || strings.ContainsFunc(out, func(r rune) bool { return !unicode.IsGraphic(r) }) {
			t.Fatalf("Escape(%q) = %q: not all graphic", s, out)
		}
	})
}

// TestEscapeJSON: what Escape would escape is written as a \u escape, and the JSON means what it
// meant; text with nothing of the kind is returned as it is.
func TestEscapeJSON(t *testing.T) {
	for in, want := range map[string]string{
		`["/app","--port=8080"]`:    `["/app","--port=8080"]`,
		`["x\u007f","\u009b31m"]`:   `["x\u007f","\u009b31m"]`,
		"[\"x\x7f\",\"\u009b31m\"]": `["x\u007f","\u009b31m"]`,
		"[\"right\u202eleft\"]":     `["right\u202eleft"]`,
		"{\"k\":\"\U000e0001tag\"}": `{"k":"\udb40\udc01tag"}`,
		"[\"naïve – ok\",\"\\\"\"]": "[\"naïve – ok\",\"\\\"\"]",
	} {
		got := string(EscapeJSON([]byte(in)))
		if got != want {
			t.Errorf("EscapeJSON(%q) = %q, want %q", in, got, want)
		}
		var before, after any
		if err := json.Unmarshal([]byte(in), &before); err != nil {
			t.Fatalf("bad test input %q: %v", in, err)
		}
		if err := json.Unmarshal([]byte(got), &after); err != nil || !reflect.DeepEqual(before, after) {
			t.Errorf("EscapeJSON(%q) = %q means %v (%v), want %v", in, got, after, err, before)
		}
	}
}

// FuzzEscapeJSON: whatever strings a list holds, encoding/json's text of it comes out graphic
// only, and meaning the same list.
func FuzzEscapeJSON(f *testing.F) {
	f.Add("a", "\x7f\u009b\u202e")
	f.Fuzz(func(t *testing.T, a, b string) {
		in, err := json.Marshal([]string{a, b})
		if err != nil {
			t.Fatal(err)
		}
		out := EscapeJSON(in)
		if !utf8.Valid(out) || bytes.ContainsFunc(out, func(r rune) bool { return !unicode.IsGraphic(r) }) {
			t.Fatalf("EscapeJSON(%q) = %q: not all graphic", in, out)
		}
		var before, after []string
		_ = json.Unmarshal(in, &before)
		if err := json.Unmarshal(out, &after); err != nil || !reflect.DeepEqual(before, after) {
			t.Fatalf("EscapeJSON(%q) = %q means %q (%v), want %q", in, out, after, err, before)
		}
	})
}
