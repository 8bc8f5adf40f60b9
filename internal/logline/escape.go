package logline

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape is s, text that may come from anywhere (a server's answer, a command line, an
// environment), as it is, unless it holds what would break its line or act on a terminal: a
// control character (a carriage return, an escape sequence), a line or paragraph separator, a
// format character (a right-to-left override), bytes that are not UTF-8. Then s is escaped as Go
// quotes a string (\r, \x1b, \u202e, \xff, and with them \" and \\, so that what was escaped can
// be told from what was written so), without the quotes.
func Escape(s string) string {
	if !strings.ContainsFunc(s, escaped) {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

// EscapeJSON is JSON text b (encoding/json's, valid UTF-8) with every character that Escape
// would escape written as a JSON \u escape, which JSON gives the same meaning: DEL, the C1
// controls (U+009B, a terminal's CSI), a right-to-left override, a line separator. encoding/json
// writes them raw (it escapes only the C0 controls and U+2028, U+2029), and a list printed as
// JSON (an argv in a console log line) would carry them to the terminal as they are. b itself is
// returned when it holds none.
func EscapeJSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, escaped) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		i += n
		if !escaped(r) {
			out = utf8.AppendRune(out, r)
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}

// escaped reports whether Escape escapes r: what is not graphic, and U+FFFD, which stands for
// bytes that are not UTF-8.
func escaped(r rune) bool { return r == utf8.RuneError || !unicode.IsGraphic(r) }
