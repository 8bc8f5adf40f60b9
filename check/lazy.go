package check

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled the first time it is used. This package is linked
// into drainit, and Go initialises every linked package before main: a package-level
// regexp.MustCompile would be compiled on every container start, before drainit starts the app,
// for a subcommand that those runs never use.
type lazyRegexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.expr) })
	return l.re
}

// MatchString is regexp.Regexp's.
func (l *lazyRegexp) MatchString(s string) bool { return l.get().MatchString(s) }

// FindStringSubmatch is regexp.Regexp's.
func (l *lazyRegexp) FindStringSubmatch(s string) []string { return l.get().FindStringSubmatch(s) }

// FindAllSubmatch is regexp.Regexp's.
func (l *lazyRegexp) FindAllSubmatch(b []byte, n int) [][][]byte {
	return l.get().FindAllSubmatch(b, n)
}
