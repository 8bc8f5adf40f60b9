package release

import (
	"archive/zip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
)

const modulePath = "github.com/drainit/drainit"

// TestGoInstallReportsTheTaggedVersion: `go install github.com/drainit/drainit/cmd/drainit@v0.1.0`
// builds with no -ldflags, so the version must come from the build info; drainit-check installed
// beside it from the checkout (a module of its own, check/, that builds against the checkout's
// init: `go install …@version` refuses its replace directive) serves `drainit check`. The test
// publishes this
// checkout as v0.1.0 in a module proxy of its own (a directory, GOPROXY=file://…, the layout the
// go command documents), with the dependencies from the module cache, and installs from it.
func TestGoInstallReportsTheTaggedVersion(t *testing.T) {
	testenv.SkipShort(t, "builds drainit from a module proxy")
	root := testenv.ModuleRoot()
	const tag = "v0.1.0"
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	publish(t, root, proxy, tag)

	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	// Dependencies from the module cache's download directory, itself a valid proxy: no network.
	deps := filepath.Join(goEnv("GOMODCACHE"), "cache", "download")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, "go", "install", modulePath+"/cmd/drainit@"+tag)
	install.Env = append(os.Environ(),
		"GOPROXY=file://"+proxy+",file://"+deps,
		"GOSUMDB=off", // the test's own publication of v0.1.0 is in no checksum database
		"GOPRIVATE=", "GONOPROXY=", "GONOSUMDB=", "GOFLAGS=-modcacherw",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"), // leave the user's cache as it was
		"GOBIN="+filepath.Join(tmp, "bin"),
		"GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install %s/cmd/drainit@%s: %v\n%s", modulePath, tag, err, out)
	}
	check := exec.CommandContext(ctx, "go", "install", "./check/cmd/drainit-check")
	check.Dir = root
	check.Env = append(os.Environ(), "GOBIN="+filepath.Join(tmp, "bin"), "CGO_ENABLED=0")
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("go install ./check/cmd/drainit-check: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(tmp, "bin", "drainit"), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("drainit version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "drainit "+tag+" (") {
		t.Errorf("the go-installed drainit says %q, want version %s", out, tag)
	}
	// drainit check runs the drainit-check installed beside it (pre-commit installs both so).
	checkRunsBeside(t, filepath.Join(tmp, "bin", "drainit"), "the go-installed")
}

// checkRunsBeside checks that drainit's `drainit check` runs the drainit-check beside it, with no
// PATH to find another: on malformed YAML from standard input, drainit-check's exit 2 naming
// <stdin>. what says which drainit it is.
func checkRunsBeside(t *testing.T, drainit, what string) {
	t.Helper()
	check := exec.Command(drainit, "check", "-")
	check.Stdin = strings.NewReader("kind: [")
	check.Env = append(os.Environ(), "PATH=/nonexistent")
	out, _ := check.CombinedOutput()
	if code := check.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "<stdin>") {
		t.Errorf("%s drainit check, on malformed YAML: exit %d, %q; want drainit-check's exit 2 naming <stdin>", what, code, out)
	}
}

// publish writes module version tag of the checkout at root into a GOPROXY directory: list, info,
// mod and the zip, which holds the files git knows (tracked, or new and not ignored) outside
// nested modules, under module@version/.
func publish(t *testing.T, root, proxy, tag string) {
	t.Helper()
	dir := filepath.Join(proxy, modulePath, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	var names []string
	nested := map[string]bool{} // directories holding another module's go.mod
	for _, name := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if filepath.Base(name) == "go.mod" && name != "go.mod" {
			nested[filepath.Dir(name)+"/"] = true
		}
		names = append(names, name)
	}
	zf, err := os.Create(filepath.Join(dir, tag+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
next:
	for _, name := range names {
		for d := range nested {
			if strings.HasPrefix(name, d) {
				continue next
			}
		}
		st, err := os.Lstat(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if !st.Mode().IsRegular() {
			continue // module zips hold regular files only
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(modulePath + "@" + tag + "/" + filepath.ToSlash(name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"list":        tag + "\n",
		tag + ".info": `{"Version":"` + tag + `","Time":"2026-11-23T00:00:00Z"}`,
		tag + ".mod":  string(gomod),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
