package check

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseGlob(t *testing.T) {
	cases := []struct {
		in    string
		root  string
		parts string
		err   string
	}{
		{"k8s/**/*.yaml", "k8s", "**|*.yaml", ""},
		{"*.yaml", ".", "*.yaml", ""},
		{"./k8s/apps/*/deploy.yml", "k8s/apps", "*|deploy.yml", ""},
		{"/srv/k8s/*.yaml", "/srv/k8s", "*.yaml", ""},
		{"/*.yaml", "/", "*.yaml", ""},
		{"a/b[0-9]/c", "a", "b[0-9]|c", ""},
		{"a//**//x.yaml/", "a", "**|x.yaml", ""},
		{"k8s/[", "", "", "syntax error in pattern"},
		{"k8s/*/../x.yaml", "", "", ".. after a wildcard"},
	}
	for _, c := range cases {
		g, err := parseGlob(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.in) {
				t.Errorf("parseGlob(%q): error %v, want one naming the pattern and saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || g.root != c.root || strings.Join(g.parts, "|") != c.parts {
			t.Errorf("parseGlob(%q) = %q %q, %v; want %q %q", c.in, g.root, g.parts, err, c.root, c.parts)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern string // below the root
		path    string
		want    bool
	}{
		{"**/*.yaml", "a.yaml", true}, // ** matches no directory at all
		{"**/*.yaml", "a/b/c.yaml", true},
		{"**/*.yaml", "a/b/c.yml", false},
		{"**/*.yaml", ".hidden/c.yaml", false}, // ** does not enter hidden directories
		{"**/*.yaml", "a/.c.yaml", false},      // * does not match hidden files
		{".*/*.yaml", ".github/c.yaml", true},  // a part starting with a dot does
		{"**/.github/**/*.yaml", "x/.github/workflows/ci.yaml", true},
		{"*/deploy.yaml", "web/deploy.yaml", true},
		{"*/deploy.yaml", "web/x/deploy.yaml", false},
		{"a/**/b/**/c.yaml", "a/b/c.yaml", true},
		{"a/**/b/**/c.yaml", "a/x/y/b/z/c.yaml", true},
		{"a/**/b/**/c.yaml", "a/x/y/z/c.yaml", false},
		{"**", "any/depth/file.json", true},
		{"**/**/**/x", "x", true},
		{"d[0-9]/*.yaml", "d7/a.yaml", true},
		{"d[^0-9]/*.yaml", "d7/a.yaml", false},
		{"**/x.yaml", "../../x.yaml", true}, // .. is not hidden: excludes match paths outside the working directory
	}
	for _, c := range cases {
		g := globPattern{root: ".", parts: strings.Split(c.pattern, "/")}
		if got := g.match(c.path); got != c.want {
			t.Errorf("%q matches %q: %v, want %v", c.pattern, c.path, got, c.want)
		}
		if got := naiveMatch(g.parts, splitRel(c.path)); got != c.want {
			t.Errorf("the naive matcher disagrees on %q, %q", c.pattern, c.path)
		}
	}
}

// TestGlobMayContain: the walk prunes only directories that cannot hold a match.
func TestGlobMayContain(t *testing.T) {
	g := globPattern{root: ".", parts: strings.Split("apps/*/k8s/*.yaml", "/")}
	for dir, want := range map[string]bool{"apps": true, "apps/web": true, "apps/web/k8s": true, "apps/web/k8s/deeper": false,
		"other": false, "apps/.git": false} {
		if got := g.mayContain(dir); got != want {
			t.Errorf("%q may hold a match below %q: %v, want %v", g.parts, dir, got, want)
		}
	}
	g = globPattern{root: ".", parts: strings.Split("**/deploy.yaml", "/")}
	if !g.mayContain("a/b/c/d") || g.mayContain("a/.git") {
		t.Errorf("** must look at any depth, but never inside hidden directories")
	}
}

// naiveMatch is the obvious recursive matcher, exponential in the number of **: the reference
// the automaton is fuzzed against.
func naiveMatch(parts, comps []string) bool {
	if len(parts) == 0 {
		return len(comps) == 0
	}
	if parts[0] == "**" {
		if naiveMatch(parts[1:], comps) {
			return true
		}
		return len(comps) > 0 && !hidden(comps[0]) && naiveMatch(parts, comps[1:])
	}
	if len(comps) == 0 {
		return false
	}
	if hidden(comps[0]) && !strings.HasPrefix(parts[0], ".") {
		return false
	}
	ok, _ := path.Match(parts[0], comps[0])
	return ok && naiveMatch(parts[1:], comps[1:])
}

// FuzzGlob: parsing any pattern never panics; a parsed pattern's root is literal and its parts
// are valid; and matching agrees with the naive matcher on any path. Read as an --exclude
// pattern, it never panics either, and an absolute one matches no relative path. Seeds are in
// testdata/fuzz/FuzzGlob.
func FuzzGlob(f *testing.F) {
	f.Fuzz(func(t *testing.T, pattern, p string) {
		fuzzExclude(t, pattern, p)
		g, err := parseGlob(pattern)
		if err != nil {
			if !strings.Contains(err.Error(), "pattern") {
				t.Fatalf("error does not say it is about the pattern: %v", err)
			}
			return
		}
		if hasMeta(g.root) && !strings.ContainsAny(pattern, `\`) {
			t.Fatalf("root %q of %q has a metacharacter", g.root, pattern)
		}
		for _, part := range g.parts {
			if _, err := path.Match(part, ""); err != nil || part == "" || strings.Contains(part, "/") {
				t.Fatalf("part %q of %q", part, pattern)
			}
		}
		if p == "" || path.Clean(p) != p || path.IsAbs(p) || p == "." {
			return // a walk hands the matcher clean relative paths only
		}
		comps := splitRel(p)
		if len(g.parts) > 8 || len(comps) > 8 {
			return // the naive matcher is exponential
		}
		if got, want := g.match(p), naiveMatch(g.parts, comps); got != want {
			t.Fatalf("%q (parts %q) matches %q: %v, the naive matcher says %v", pattern, g.parts, p, got, want)
		}
		if g.match(p) && !g.mayContain(path.Dir(p)) && path.Dir(p) != "." {
			t.Fatalf("%q matches %q but its directory would be pruned", pattern, p)
		}
	})
}

// fuzzExclude checks an --exclude pattern against a path as a walk would show it.
func fuzzExclude(t *testing.T, pattern, p string) {
	ex, err := parseExclude(pattern)
	if err != nil {
		if !strings.HasPrefix(err.Error(), "--exclude") {
			t.Fatalf("error does not say it is about --exclude: %v", err)
		}
		return
	}
	if excluded(p, []globPattern{ex}) && ex.abs && !strings.HasPrefix(filepath.ToSlash(filepath.Clean(p)), "/") {
		t.Fatalf("absolute --exclude %q matches the relative path %q", pattern, p)
	}
}
