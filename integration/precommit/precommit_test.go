// Package precommit tests the repository's pre-commit hook (.pre-commit-hooks.yaml) the way a
// user's repository runs it: Debian's pre-commit clones this repository at a commit, builds
// drainit with the machine's Go, and runs `drainit check` on the staged manifests.
package precommit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
)

// A Deployment whose preStop (55 s) plus the app's shutdown (Spring Boot's 10 s) exceeds the
// grace period (60 s): the kubelet SIGKILLs the app mid-shutdown.
const badManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 60
      containers:
        - name: web
          image: example.com/web:1
          env:
            - name: SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE
              value: 10s
            - name: SERVER_SHUTDOWN
              value: graceful
          lifecycle:
            preStop:
              exec:
                command: ["sleep", "55"]
`

// TestHookFailsOnTimingError: a repository using the hook cannot commit the manifest above
// (pre-commit exits 1 and shows drainit's finding with its file and line), and can once the grace
// period is fixed; other YAML in the repository (a compose file) does not get in the way.
func TestHookFailsOnTimingError(t *testing.T) {
	testenv.SkipShort(t, "pre-commit builds drainit")
	preCommit, err := testenv.LookPath("pre-commit")
	if err != nil {
		testenv.SkipUnlessCI(t, err.Error()+" (Debian: apt-get install pre-commit)")
	}
	git, err := testenv.LookPath("git")
	if err != nil {
		testenv.SkipUnlessCI(t, err.Error())
	}
	tmp := t.TempDir()
	env := append(os.Environ(),
		"PRE_COMMIT_HOME="+filepath.Join(tmp, "cache"), // the hook's build, not the user's
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	// pre-commit gives the hook's build a GOPATH of its own; keep the module cache the machine's,
	// so that the build needs no network beyond what `go build` here needed.
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		env = append(env, "GOMODCACHE="+strings.TrimSpace(string(out)), "GOFLAGS=-modcacherw")
	}
	run := func(dir string, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(dir string, name string, args ...string) string {
		t.Helper()
		out, err := run(dir, name, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return out
	}

	// The hook's repository: this checkout as it is (tracked and new files), committed, because
	// pre-commit clones a repository at a revision.
	hookRepo := filepath.Join(tmp, "drainit")
	root := moduleRoot(t)
	files := must(root, git, "ls-files", "-co", "--exclude-standard", "-z")
	for _, name := range strings.Split(strings.TrimRight(files, "\x00"), "\x00") {
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(hookRepo, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	must(hookRepo, git, "init", "-q")
	must(hookRepo, git, "add", "-A")
	must(hookRepo, git, "commit", "-q", "-m", "drainit")
	rev := strings.TrimSpace(must(hookRepo, git, "rev-parse", "HEAD"))

	// The user's repository: a manifest, and the hook in its pre-commit configuration.
	user := filepath.Join(tmp, "user")
	if err := os.MkdirAll(filepath.Join(user, "k8s"), 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(user, "k8s", "web.yaml")
	config := "repos:\n  - repo: " + hookRepo + "\n    rev: " + rev + "\n    hooks:\n      - id: drainit-check\n"
	for path, content := range map[string]string{
		filepath.Join(user, ".pre-commit-config.yaml"): config,
		manifest: badManifest,
		// Staged YAML that is no manifest, which pre-commit names to the hook like any other:
		// skipped, not an error.
		filepath.Join(user, "compose.yaml"): "services:\n  web:\n    image: example.com/web:1\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(user, git, "init", "-q")
	must(user, git, "add", "-A")

	out, err := run(user, preCommit, "run", "--all-files")
	var exit *exec.ExitError
	if err == nil || !asExit(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("pre-commit run on a manifest with a timing error: %v, want exit status 1\n%s", err, out)
	}
	if !strings.Contains(out, "k8s/web.yaml:23: error:") || !strings.Contains(out, "(shutdown-exceeds-grace)") {
		t.Errorf("pre-commit's output does not show drainit's shutdown-exceeds-grace error at k8s/web.yaml:23:\n%s", out)
	}

	// Fixed: a grace period that covers preStop and the shutdown.
	fixed := strings.Replace(badManifest, "terminationGracePeriodSeconds: 60", "terminationGracePeriodSeconds: 75", 1)
	if err := os.WriteFile(manifest, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	must(user, git, "add", "-A")
	if out, err := run(user, preCommit, "run", "--all-files"); err != nil {
		t.Errorf("pre-commit run on the fixed manifest: %v, want it to pass\n%s", err, out)
	}
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}

// moduleRoot is the directory above the package's with the go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}
