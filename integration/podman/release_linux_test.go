package podman

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/release"
	"github.com/drainit/drainit/integration/testenv"
)

// TestReleaseImageCopyFrom adopts the released image the way the README's Install section tells
// a user to: load the OCI archive `make release` left in dist/, add drainit to an app image that
// knows nothing of it with one COPY --from line, run it, stop it. The stop sequence runs: the
// app gets its SIGTERM only after the drain, and the container exits with the app's status.
func TestReleaseImageCopyFrom(t *testing.T) {
	h := need(t)
	d, err := release.Find()
	if errors.Is(err, release.ErrNoDist) {
		testenv.SkipUnlessCI(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	out := h.must(t, "load", "--input", d.Image())
	if !strings.Contains(out, d.ImageRef()) {
		t.Fatalf("podman load %s: %q, want it to load %s", filepath.Base(d.Image()), out, d.ImageRef())
	}

	// The released image holds /drainit and /drainit-check (which `drainit check` runs) and
	// nothing else: no shell, no libc, nothing to patch.
	files := imageFiles(t, h, d.ImageRef())
	slices.Sort(files)
	if !slices.Equal(files, []string{"drainit", "drainit-check"}) {
		t.Errorf("the released image holds %v, want drainit and drainit-check only", files)
	}

	// `drainit check` from the image, where CI runs it: the checkout mounted, checked as a tree.
	src := t.TempDir()
	bad := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  terminationGracePeriodSeconds: 10\n" +
		"  containers:\n    - name: web\n      image: example.com/web:1\n" +
		"      lifecycle:\n        preStop:\n          exec:\n            command: [\"sleep\", \"15\"]\n"
	if err := os.MkdirAll(filepath.Join(src, "k8s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "k8s", "web.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdout, stderr, err := h.podman(ctx, "run", "--rm", "--pull=never", "--volume="+src+":/src:ro", "--workdir=/src",
		d.ImageRef(), "check", ".")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("drainit check . in the image: %v, want exit status 1 (an error-level finding)\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "k8s/web.yaml:12: error:") || !strings.Contains(stdout, "(prestop-exceeds-grace)") {
		t.Errorf("drainit check . in the image printed no prestop-exceeds-grace error at k8s/web.yaml:12:\n%s%s", stdout, stderr)
	}

	// The user's image: their app's (FROM scratch, the test app alone), drainit copied in, and
	// drainit put in front of the app's command.
	user := "localhost/drainit-release-user:latest"
	containerfile := "FROM " + imageApp + "\n" +
		"COPY --from=" + d.ImageRef() + " /drainit /drainit\n" +
		`ENTRYPOINT ["/drainit", "--drain-delay=2s", "--", "/testapp"]` + "\n"
	f := filepath.Join(t.TempDir(), "Containerfile")
	if err := os.WriteFile(f, []byte(containerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	h.must(t, "build", "--pull=never", "--quiet", "-f", f, "-t", user, filepath.Dir(f))

	if v := h.must(t, "run", "--rm", "--pull=never", "--entrypoint=/drainit", user, "version"); !strings.HasPrefix(v, "drainit v"+d.Meta.Version+" ") {
		t.Errorf("the copied drainit says %q, want the release's version %s", v, d.Meta.Version)
	}

	const drain = 2 * time.Second
	// As a non-root user, as many images run: the binary must not need root to start the app.
	id := h.startImage(t, user, []string{"--user=65534:65534"}, "slow-stop", "300ms")
	h.waitLog(t, id, "ready app", 10*time.Second)
	took, stderr := h.stop(t, id, 10)
	code, _ := h.exited(t, id)
	o := h.logs(t, id)
	if strings.Contains(stderr, podmanKilled) {
		t.Errorf("podman had to SIGKILL the container: %s", stderr)
	}
	if code != 0 {
		t.Errorf("container exit code %d, want 0 (the app's)", code)
	}
	trigger := o.event(t, "stop sequence started")
	sent := o.event(t, "stop signal sent")
	if el := sent.elapsed(t); el < drain {
		t.Errorf("the stop signal went %s after the trigger %q, before the drain delay %s", el, trigger.Signal, drain)
	}
	o.appLine(t, "stopped app")
	t.Logf("podman stop took %s", took)
}

// imageFiles lists the regular files and links of an image's filesystem (podman export of a
// container created from it, never started).
func imageFiles(t *testing.T, h *harness, img string) []string {
	t.Helper()
	id := h.must(t, "create", "--pull=never", img)
	defer h.must(t, "rm", id)
	cmd := exec.Command(h.bin, "export", id)
	cmd.Env = h.env
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var files []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("podman export %.12s: %v", id, err)
		}
		if hdr.Typeflag != tar.TypeDir {
			files = append(files, strings.TrimPrefix(hdr.Name, "./"))
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("podman export %.12s: %v", id, err)
	}
	return files
}
