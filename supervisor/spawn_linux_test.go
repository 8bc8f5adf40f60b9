package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpawnFailureSaysWhy: an app that cannot be started gets a shell's status and a reason that
// names the real cause, not "no such file" for a file that is there.
func TestSpawnFailureSaysWhy(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!"+filepath.Join(dir, "no-such-interpreter")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		code       int
		says       string
	}{
		{"missing interpreter", script, 127, "the interpreter its #! line names, " + filepath.Join(dir, "no-such-interpreter") + ", does not exist"},
		{"directory", dir, 126, "is a directory"},
		{"missing file", filepath.Join(dir, "no-such-app"), 127, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := spawn([]string{c.path}, false)
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("spawn(%q): %v, want a *StartError", c.path, err)
			}
			if se.Code != c.code || !strings.Contains(err.Error(), c.says) {
				t.Errorf("spawn(%q): status %d, %q; want %d and a reason saying %q", c.path, se.Code, err, c.code, c.says)
			}
		})
	}
}
