package check

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Patterns drainit expands itself, so that `drainit check 'k8s/**/*.yaml'` works the same under
// every shell (sh has no **, and a pattern that matches nothing reaches the program as it was
// typed) and on Windows, whose shells expand nothing.
//
// A pattern is split at its slashes. Each part is a path.Match pattern (*, ?, [a-z], [^a-z],
// \ escapes outside Windows), matched against one path component; a part that is exactly **
// matches any number of directories, none included. As in the shells, * and ** do not match a
// name that starts with a dot: a hidden file or directory is matched only by a part that starts
// with a dot itself (.github/**/*.yaml).

// globPattern is a parsed pattern: the directory it starts in, and the parts below it.
type globPattern struct {
	root  string   // the literal leading directories ("." when there are none)
	parts []string // the parts from the first one with a metacharacter on
	abs   bool     // an --exclude pattern from the root directory: it matches absolute paths only
}

// hasMeta says whether an argument is a pattern rather than a path.
func hasMeta(s string) bool {
	return strings.ContainsAny(s, "*?[")
}

// parseGlob splits a pattern into its literal root and its parts, and checks the parts' syntax.
func parseGlob(pattern string) (globPattern, error) {
	slashed := filepath.ToSlash(pattern)
	comps := strings.Split(slashed, "/")
	var root []string
	i := 0
	for ; i < len(comps); i++ {
		if strings.ContainsAny(comps[i], `*?[\`) {
			break
		}
		root = append(root, comps[i])
	}
	var g globPattern
	switch {
	case len(root) == 0:
		g.root = "."
	case len(root) == 1 && root[0] == "":
		g.root = "/" // "/*.yaml": the pattern starts at the root directory
	default:
		g.root = filepath.Clean(filepath.FromSlash(strings.Join(root, "/")))
	}
	for _, c := range comps[i:] {
		if c == "" || c == "." {
			continue // "a//b", "a/./b", a trailing slash
		}
		if c == ".." {
			return globPattern{}, fmt.Errorf("pattern %q: .. after a wildcard is not supported", pattern)
		}
		if _, err := path.Match(c, ""); err != nil {
			return globPattern{}, fmt.Errorf("pattern %q: %w", pattern, err)
		}
		g.parts = append(g.parts, c)
	}
	if len(g.parts) == 0 {
		return globPattern{}, fmt.Errorf("pattern %q: no part to match", pattern)
	}
	return g, nil
}

// allowsHidden says whether some part can match a hidden name, so that the walk must look
// inside hidden directories.
func (g globPattern) allowsHidden() bool {
	return slices.ContainsFunc(g.parts, func(p string) bool { return strings.HasPrefix(p, ".") })
}

// partMatches matches one part against one path component; ** is handled by the caller.
func partMatches(part, name string) bool {
	if hidden(name) && !strings.HasPrefix(part, ".") {
		return false
	}
	ok, _ := path.Match(part, name) // the syntax was checked by parseGlob
	return ok
}

// states runs the pattern over the components of a path below the root, as an automaton whose
// states are positions in parts: the result holds every position reachable once all components
// are consumed. Its cost is parts × components, however many ** the pattern has.
func (g globPattern) states(comps []string) []bool {
	m := len(g.parts)
	cur := make([]bool, m+1)
	cur[0] = true
	closure := func(s []bool) {
		for i := 0; i < m; i++ {
			if s[i] && g.parts[i] == "**" {
				s[i+1] = true // ** matching no directory at all
			}
		}
	}
	closure(cur)
	for _, c := range comps {
		next := make([]bool, m+1)
		for i := 0; i < m; i++ {
			if !cur[i] {
				continue
			}
			if g.parts[i] == "**" {
				if !hidden(c) {
					next[i] = true // ** swallowing one more directory
				}
			} else if partMatches(g.parts[i], c) {
				next[i+1] = true
			}
		}
		closure(next)
		cur = next
	}
	return cur
}

// match says whether a file's path below the root (slash-separated) matches the pattern.
func (g globPattern) match(rel string) bool {
	return g.states(splitRel(rel))[len(g.parts)]
}

// mayContain says whether a directory below the root (slash-separated) may hold a match: some
// state short of the end is still reachable after its components.
func (g globPattern) mayContain(rel string) bool {
	return slices.Contains(g.states(splitRel(rel))[:len(g.parts)], true)
}

func splitRel(rel string) []string {
	if rel == "" || rel == "." {
		return nil
	}
	return strings.Split(rel, "/")
}

// parseExclude reads an --exclude pattern: like a pattern argument, but matched from its first
// part against the whole path of a found file as findings show it (k8s/legacy/**, **/kubelet.yaml,
// /src/k8s/*.yaml).
func parseExclude(pattern string) (globPattern, error) {
	slashed := filepath.ToSlash(filepath.Clean(pattern))
	g := globPattern{root: ".", abs: strings.HasPrefix(slashed, "/")}
	for _, c := range strings.Split(slashed, "/") {
		if c == "" || c == "." {
			continue
		}
		if _, err := path.Match(c, ""); err != nil {
			return globPattern{}, fmt.Errorf("--exclude %q: %w", pattern, err)
		}
		g.parts = append(g.parts, c)
	}
	if len(g.parts) == 0 {
		return globPattern{}, fmt.Errorf("--exclude %q: no part to match", pattern)
	}
	return g, nil
}

// excluded says whether a found path matches one of the --exclude patterns.
func excluded(p string, ex []globPattern) bool {
	slashed := filepath.ToSlash(filepath.Clean(p))
	// An absolute path's components start with the root's empty name, which a relative
	// pattern's ** may swallow; an absolute pattern's parts start below the root.
	below, abs := strings.CutPrefix(slashed, "/")
	below = strings.TrimLeft(below, "/")
	for _, g := range ex {
		if !g.abs && g.match(slashed) || g.abs && abs && g.match(below) {
			return true
		}
	}
	return false
}
