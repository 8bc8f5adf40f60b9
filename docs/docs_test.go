// Package docs holds drainit's reference documentation, and this test of it: every relative link
// in the repository's Markdown files reaches a file, and a link to a heading reaches a heading;
// every excerpt the docs quote from a file is still in that file.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	inlineLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\[[^\]]+\]:\s+(\S+)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	mdLink     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	excerpt    = regexp.MustCompile(`^<!-- excerpt of (\S+) -->$`)
)

// markdownFiles lists the repository's Markdown files, test data aside.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 5 {
		t.Fatalf("found %d Markdown files: is the test run from docs/?", len(out))
	}
	return out
}

// prose returns the file's lines outside fenced code blocks, each with its line number.
func prose(text string) (lines []string, numbers []int) {
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines, numbers = append(lines, l), append(numbers, i+1)
		}
	}
	return lines, numbers
}

// slug is the anchor GitHub gives a heading: its text (code marks and link targets left out),
// lower case, without punctuation but - and _, spaces as dashes.
func slug(h string) string {
	h = mdLink.ReplaceAllString(strings.ReplaceAll(h, "`", ""), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file's headings (a repeated one numbered, as GitHub
// does: x, x-1, x-2).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	lines, _ := prose(text)
	for _, l := range lines {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		a := s
		for n := 1; out[a]; n++ {
			a = s + "-" + strconv.Itoa(n)
		}
		out[a] = true
	}
	return out
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"`drainit check` on macOS and Windows":                      "drainit-check-on-macos-and-windows",
		"The whole stop with a Service (cluster_linux_test.go)":     "the-whole-stop-with-a-service-cluster_linux_testgo",
		"What starts it: the stop signal is always a trigger":       "what-starts-it-the-stop-signal-is-always-a-trigger",
		"Without changing the image: drainit as the runtime's init": "without-changing-the-image-drainit-as-the-runtimes-init",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestLinks: every relative link in a Markdown file names a file or directory that exists, and
// a #fragment into a Markdown file names one of its headings.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := cache[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cache[path] = anchors(string(data))
		return cache[path]
	}
	for _, file := range markdownFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines, numbers := prose(string(data))
		for i, l := range lines {
			var targets []string
			if m := refLink.FindStringSubmatch(l); m != nil {
				targets = append(targets, m[1])
			}
			for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, "code"), -1) {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(resolved); err != nil {
						t.Errorf("%s:%d: link to %s: no such file or directory", file, numbers[i], target)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(resolved, ".md") && !anchorsOf(resolved)[frag] {
					t.Errorf("%s:%d: link to %s: %s has no heading #%s", file, numbers[i], target, resolved, frag)
				}
			}
		}
	}
}

// isExcerpt says whether block is a run of whole lines of src, each with the same indentation
// taken off (a manifest quoted from its pod spec down).
func isExcerpt(block, src []string) bool {
	if len(block) == 0 {
		return false
	}
	for k := range src {
		indent, ok := strings.CutSuffix(src[k], block[0])
		if !ok || strings.Trim(indent, " ") != "" || k+len(block) > len(src) {
			continue
		}
		match := true
		for i, b := range block {
			if src[k+i] != indent+b && !(b == "" && strings.TrimSpace(src[k+i]) == "") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func TestIsExcerpt(t *testing.T) {
	src := strings.Split("a:\n  b: 1\n  c:\n    d: 2\n", "\n")
	for _, c := range []struct {
		block []string
		want  bool
	}{
		{[]string{"b: 1", "c:", "  d: 2"}, true},
		{[]string{"  b: 1", "  c:"}, true},
		{[]string{"b: 1", "  d: 2"}, false},
		{[]string{"b: 2"}, false},
		{nil, false},
	} {
		if got := isExcerpt(c.block, src); got != c.want {
			t.Errorf("isExcerpt(%q) = %v, want %v", c.block, got, c.want)
		}
	}
}

// TestExcerpts: a fenced block after "<!-- excerpt of PATH -->" is a run of whole lines of
// PATH (relative to the Markdown file), less a common indentation, so that what the docs quote of an example cannot drift
// from the example, which its own tests check.
func TestExcerpts(t *testing.T) {
	found := 0
	for _, file := range markdownFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i, l := range lines {
			m := excerpt.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			found++
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
				t.Errorf("%s:%d: an excerpt marker not followed by a fenced block", file, i+1)
				continue
			}
			var block []string
			for _, b := range lines[i+2:] {
				if strings.HasPrefix(b, "```") {
					break
				}
				block = append(block, b)
			}
			src, err := os.ReadFile(filepath.Join(filepath.Dir(file), m[1]))
			if err != nil {
				t.Errorf("%s:%d: %v", file, i+1, err)
				continue
			}
			if !isExcerpt(block, strings.Split(string(src), "\n")) {
				t.Errorf("%s:%d: the block after the marker is not a run of whole lines of %s: copy it again from there", file, i+1, m[1])
			}
		}
	}
	if found == 0 {
		t.Error("no excerpt marker found: the README quotes its pod manifest from examples/kubernetes")
	}
}
