package oneline

import (
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
