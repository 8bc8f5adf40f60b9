// Package buildinfo says which build of drainit a binary of this module is: the release stamp
// the build put in (-ldflags -X), merged with what the go command recorded.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Unstamped is the version a binary reports when nothing says which it is: no -ldflags stamp,
// and no module version in the build info.
const Unstamped = "dev"

// Info is what `drainit version` reports.
type Info struct {
	version  string // a release (v0.1.0), a pseudo-version, "(devel)", or "dev" when nothing says
	commit   string // full hash, or "" when unknown (a go install from the module proxy has none)
	date     string // the commit's date in UTC RFC 3339, or "" when unknown
	modified bool   // built from a checkout with uncommitted changes
	goVer    string
	platform string
}

// Read is the version of the running binary, from its stamp: the values the build set with
// -ldflags "-X main.version=… -X main.commit=… -X main.date=…" (the Makefile stamps the commit's
// hash and the commit's own date, so that two builds of one commit print the same line), each
// "" (or Unstamped for the version) where it set none.
func Read(stampVersion, stampCommit, stampDate string) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return read(stampVersion, stampCommit, stampDate, bi)
}

// read merges the -ldflags stamp with the build info: a stamp wins field by field, because a
// release build says exactly what it is, while `go install …@v0.1.0` stamps nothing and only the
// build info knows the module version (and, from a checkout, the commit).
func read(stampVersion, stampCommit, stampDate string, bi *debug.BuildInfo) Info {
	v := Info{
		version:  stampVersion,
		commit:   stampCommit,
		date:     stampDate,
		goVer:    runtime.Version(),
		platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	var rev, when string
	var modified bool
	if bi != nil {
		if (v.version == "" || v.version == Unstamped) && bi.Main.Version != "" {
			v.version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v.version == "" {
		v.version = Unstamped
	}
	if v.commit == "" {
		v.commit = rev
	}
	if v.date == "" && v.commit == rev {
		v.date = when
	}
	// The checkout's state describes the commit printed only if it is the commit it recorded.
	v.modified = modified && rev != "" && v.commit == rev
	v.date = utc(v.date)
	return v
}

// utc writes an RFC 3339 date in UTC (git's %cI keeps the committer's zone); anything else as is.
func utc(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	return t.UTC().Format(time.RFC3339)
}

// Version is the release (v0.1.0), a pseudo-version, "(devel)", or Unstamped.
func (v Info) Version() string { return v.version }

// String is the one line `drainit version` prints; unknown fields are left out, not made up.
func (v Info) String() string { return v.Line("drainit") }

// Line is String for the program named name (drainit-check reports the same release).
func (v Info) Line(name string) string {
	var parts []string
	if v.commit != "" {
		c := "commit " + v.commit
		if v.modified {
			c += "-dirty"
		}
		parts = append(parts, c)
	}
	if v.date != "" {
		parts = append(parts, "committed "+v.date)
	}
	parts = append(parts, v.goVer, v.platform)
	return fmt.Sprintf("%s %s (%s)", name, v.version, strings.Join(parts, ", "))
}
