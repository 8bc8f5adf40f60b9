package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// directSkip is a test skipping itself without this package: t.Skip, t.Skipf, t.SkipNow, or
// b. and f. alike.
var directSkip = regexp.MustCompile(`\b[a-z]+\.Skip(f|Now)?\(`)

// Every test of the module skips through this package, so that each skip under CI=true is a
// failure (SkipUnlessCI, SkipShort) or says why it must stay a skip there (SkipElsewhere,
// SkipUnlessAsked). A bare t.Skip passes CI with nothing tested.
func TestNoDirectSkips(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root: %v", err)
	}
	self := filepath.Join(root, "integration", "testenv")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == self || strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if directSkip.MatchString(line) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: %s: skip through testenv (SkipUnlessCI, SkipShort, SkipElsewhere, SkipUnlessAsked)", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
