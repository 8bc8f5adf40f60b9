// Package oneline makes text that may come from anywhere (a server's answer, a command line, an
// environment) safe to print as part of one line of a log or a terminal.
package oneline

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape is s as it is, unless it holds what would break its line or act on a terminal: a
// control character (a carriage return, an escape sequence), a line or paragraph separator, a
// format character (a right-to-left override), bytes that are not UTF-8. Then s is escaped as Go
// quotes a string (\r, \x1b, \u202e, \xff, and with them \" and \\, so that what was escaped can
// be told from what was written so), without the quotes.
func Escape(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsGraphic(r) }) {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}
