package podman

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testbin"
	"github.com/drainit/drainit/integration/testenv"
)

// The tags TestMain builds; the storage is the run's own, so a tag never collides.
const (
	// image has drainit as its ENTRYPOINT (the Containerfile): the container's command is
	// drainit's arguments.
	image = "localhost/drainit-podman-test:latest"
	// imageQuit is image with STOPSIGNAL SIGQUIT, which every image FROM nginx or php-fpm
	// inherits from its base: podman stop sends it SIGQUIT.
	imageQuit = "localhost/drainit-podman-test-quit:latest"
	// imageApp holds testapp alone, as its ENTRYPOINT: an image that knows nothing of drainit,
	// which only `podman run --init --init-path` puts in front of it.
	imageApp = "localhost/drainit-podman-test-app:latest"
)

// derived are the images TestMain builds after image, each from a Containerfile written here; the
// build context is the same (the two static binaries).
var derived = []struct{ name, tag, containerfile string }{
	{"quit", imageQuit, "FROM " + image + "\nSTOPSIGNAL SIGQUIT\n"},
	{"app", imageApp, "FROM scratch\nCOPY testapp /\nENTRYPOINT [\"/testapp\"]\n"},
}

// suite is set up once by TestMain and only read by the tests.
var suite harness

// harness is what the tests share: either the reason they cannot run, or a podman pointed at
// the run's own configuration with the image built.
type harness struct {
	skip string   // why the tests cannot run here (no root, no podman, no runc)
	err  error    // set-up failed although podman should work: a test failure, never a skip
	root string   // the run's temporary directory: configs, build context, podman's storage
	bin  string   // the podman binary
	env  []string // the environment of every podman command
	// drainit is the static drainit on the host (in the build context), for --init-path.
	drainit string
}

func TestMain(m *testing.M) {
	suite = setUp()
	code := m.Run()
	testbin.Cleanup()
	if err := suite.tearDown(); err != nil {
		fmt.Fprintf(os.Stderr, "podman tests: cleaning up: %v\n", err)
	}
	os.Exit(code)
}

// setUp checks for root, podman and runc, writes the configuration, builds the two static
// binaries and the image.
func setUp() harness {
	if os.Geteuid() != 0 {
		return harness{skip: "needs root: the tests run rootful podman (runc, cgroupfs, no user namespaces)"}
	}
	var podman string
	for _, name := range []string{"podman", "runc"} {
		p, err := testenv.LookPath(name)
		if err != nil {
			return harness{skip: fmt.Sprintf("%v (Debian: apt-get install --no-install-recommends podman runc)", err)}
		}
		if name == "podman" {
			podman = p
		}
	}
	root, err := os.MkdirTemp("", "drainit-podman-")
	if err != nil {
		return harness{err: fmt.Errorf("creating the run's directory: %w", err)}
	}
	h := harness{root: root, bin: podman, env: podmanEnviron(root)}
	if err := h.build(); err != nil {
		h.err = err
	}
	return h
}

// podmanEnviron is the test process's environment with podman pointed at the run's
// configuration, and anything that would send podman elsewhere (another config, a remote
// service) removed.
func podmanEnviron(root string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CONTAINERS_") || strings.HasPrefix(kv, "CONTAINER_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"CONTAINERS_CONF="+filepath.Join(root, "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(root, "storage.conf"))
}

func (h *harness) build() error {
	nofile, nproc, err := hardLimits()
	if err != nil {
		return err
	}
	for _, name := range []string{"containers.conf", "storage.conf"} {
		tmpl, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("reading the project's %s: %w", name, err)
		}
		conf := strings.NewReplacer("@ROOT@", h.root, "@NOFILE@", strconv.FormatUint(nofile, 10),
			"@NPROC@", strconv.FormatUint(nproc, 10)).Replace(string(tmpl))
		if err := os.WriteFile(filepath.Join(h.root, name), []byte(conf), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	buildCtx := filepath.Join(h.root, "context")
	if err := os.Mkdir(buildCtx, 0o755); err != nil {
		return fmt.Errorf("creating the build context: %w", err)
	}
	// drainit with its own entry point, as it ships, and the test app (testbin).
	if err := testbin.CopyInto(buildCtx); err != nil {
		return err
	}
	containerfile, err := filepath.Abs("Containerfile")
	if err != nil {
		return fmt.Errorf("locating the Containerfile: %w", err)
	}
	h.drainit = filepath.Join(buildCtx, "drainit")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, stderr, err := h.podman(ctx, "build", "--pull=never", "--quiet", "-f", containerfile, "-t", image, buildCtx); err != nil {
		return fmt.Errorf("podman build: %w\n%s", err, stderr)
	}
	for _, d := range derived {
		// Outside the build context, which holds only binaries (testbin.CopyInto).
		f := filepath.Join(h.root, "Containerfile."+d.name)
		if err := os.WriteFile(f, []byte(d.containerfile), 0o644); err != nil {
			return fmt.Errorf("writing the Containerfile of %s: %w", d.tag, err)
		}
		if _, stderr, err := h.podman(ctx, "build", "--pull=never", "--quiet", "-f", f, "-t", d.tag, buildCtx); err != nil {
			return fmt.Errorf("podman build %s: %w\n%s", d.tag, err, stderr)
		}
	}
	return nil
}

// hardLimits are the values for podman's default_ulimits. runc's container init inherits the
// podman process's limits and cannot raise a hard limit (root lacks CAP_SYS_RESOURCE on these
// machines), so neither value may exceed what podman itself has: for RLIMIT_NOFILE the hard
// limit it inherits (podman's default, 1048576, is too much); for RLIMIT_NPROC at most 32768,
// to which podman 4.3 lowers its own limit as it starts (strace: setrlimit(RLIMIT_NPROC, 32768)).
func hardLimits() (nofile, nproc uint64, err error) {
	const podmanNofile, podmanNproc = 1 << 20, 32768
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("reading RLIMIT_NOFILE: %w", err)
	}
	nofile = min(lim.Max, podmanNofile)
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		return 0, 0, fmt.Errorf("reading RLIMIT_NPROC: %w", err)
	}
	return nofile, min(lim.Max, podmanNproc), nil
}

// tearDown removes every container left (a test that failed half-way) and the run's directory
// with podman's storage in it.
func (h *harness) tearDown() error {
	if h.root == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if h.err == nil {
		if _, stderr, err := h.podman(ctx, "rm", "--all", "--force", "--time", "0"); err != nil {
			errs = append(errs, fmt.Errorf("podman rm --all: %w: %s", err, stderr))
		}
	}
	if err := os.RemoveAll(h.root); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", h.root, err))
	}
	return errors.Join(errs...)
}

// need returns the harness, or ends the test: a skip when podman cannot run here (a failure
// under CI=true, where a skip would hide that nothing was tested), a failure when the set-up
// broke.
func need(t *testing.T) *harness {
	t.Helper()
	if suite.skip != "" {
		testenv.SkipUnlessCI(t, suite.skip)
	}
	if suite.err != nil {
		t.Fatal(suite.err)
	}
	return &suite
}

// podman runs one podman command with the run's configuration.
func (h *harness) podman(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env
	// conmon leaves a file named "oom" in its working directory when the kernel OOM-kills a
	// container (TestAppOOMKilled): in the run's directory, not the package's.
	cmd.Dir = h.root
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("podman %s: %w", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), err
}

// must runs a podman command that has to succeed and returns its trimmed stdout.
func (h *harness) must(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, stderr, err := h.podman(ctx, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	return strings.TrimSpace(out)
}

// start runs image detached, with opts added to `podman run` (--env=DRAINIT_…=…,
// --volume=…) and args as drainit's command line. The container is removed when the test ends;
// if the test failed, its log is shown first.
func (h *harness) start(t *testing.T, opts []string, args ...string) string {
	t.Helper()
	return h.startImage(t, image, opts, args...)
}

// startImage is start with another of the images TestMain built; args is the container's
// command, which the image's ENTRYPOINT gets as its arguments.
func (h *harness) startImage(t *testing.T, img string, opts []string, args ...string) string {
	t.Helper()
	run := append([]string{"run", "--detach", "--pull=never"}, opts...)
	id := h.must(t, append(append(run, img), args...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, stderr, err := h.podman(ctx, "rm", "--force", "--time", "0", id); err != nil {
			t.Errorf("%v\n%s", err, stderr)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, stderr, _ := h.podman(ctx, "logs", "--timestamps", id)
			t.Logf("container %.12s, app (stdout):\n%s\ndrainit (stderr):\n%s", id, out, stderr)
		}
	})
	return id
}

// waitLog polls the container's log until a line contains want, for up to timeout. It polls
// rather than collecting lines as they come (integration/lines): the output is conmon's, and
// only `podman logs` reaches it.
func (h *harness) waitLog(t *testing.T, id, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		out, stderr, err := h.podman(ctx, "logs", id)
		cancel()
		if err == nil && strings.Contains(out+stderr, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log of container %.12s after %s (podman logs: %v)", want, id, timeout, err)
		}
		<-tick.C
	}
}

// stop runs `podman stop --time secs` and returns how long it took and podman's stderr, where
// podman warns when it had to SIGKILL the container.
func (h *harness) stop(t *testing.T, id string, secs int) (time.Duration, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, stderr, err := h.podman(ctx, "stop", "--time", strconv.Itoa(secs), id)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	return took, stderr
}

// podmanKilled is the start of podman's warning when the stop signal did not end the container
// in time and podman sent SIGKILL.
const podmanKilled = "failed to stop container"

// exited waits for the container to exit and returns its exit code and the time it exited, as
// podman records them.
func (h *harness) exited(t *testing.T, id string) (code int, at time.Time) {
	t.Helper()
	h.must(t, "wait", id)
	var st []struct {
		State struct {
			Status     string
			ExitCode   int
			FinishedAt time.Time
		}
	}
	out := h.must(t, "inspect", "--type", "container", "--format", "json", id)
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st) != 1 {
		t.Fatalf("podman inspect %.12s: cannot read %q: %v", id, out, err)
	}
	if st[0].State.Status != "exited" {
		t.Fatalf("container %.12s is %q after podman wait, want exited", id, st[0].State.Status)
	}
	return st[0].State.ExitCode, st[0].State.FinishedAt
}

// event is one of drainit's JSON log lines, the fields the tests look at.
type event struct {
	at      time.Time
	Message string   `json:"message"`
	Phase   string   `json:"phase"`
	Elapsed *float64 `json:"elapsed"` // milliseconds since the trigger (t0)
	Signal  string   `json:"signal"`
	Status  *int     `json:"status"`
	Summary string   `json:"summary"`
	Error   string   `json:"error"`
	// The fixed drain's length, in milliseconds.
	DrainDelay *int64 `json:"drain_delay"`
	// "app started": the app's pid, and whether drainit is PID 1.
	Pid  *int `json:"pid"`
	PID1 bool `json:"pid1"`
	// drainit's own clock, to the millisecond.
	Time time.Time `json:"time"`
	// The adaptive drain's result.
	Reason         string `json:"reason"`
	Method         string `json:"method"`
	NewConnections *int   `json:"new_connections"`
}

// elapsed is the event's time since t0; the test fails if the event has none.
func (e event) elapsed(t *testing.T) time.Duration {
	t.Helper()
	if e.Elapsed == nil {
		t.Fatalf("drainit's %q event has no elapsed field", e.Message)
	}
	return time.Duration(*e.Elapsed * float64(time.Millisecond))
}

// output is a container's log split into the app's lines (stdout) and drainit's events (its
// JSON lines on stderr; the app writes nothing there in the modes used here).
type output struct {
	app     []lines.Line // with the time conmon read each line (host clock)
	drainit []event
}

// logs reads the container's whole log. Call it once the container has exited.
func (h *harness) logs(t *testing.T, id string) output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdout, stderr, err := h.podman(ctx, "logs", "--timestamps", id)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var o output
	o.app = lines.ParseTimestamped(stdout)
	for _, l := range lines.ParseTimestamped(stderr) {
		var e event
		if json.Unmarshal([]byte(l.Text), &e) != nil {
			continue // podman's own messages, if any
		}
		e.at = l.At
		o.drainit = append(o.drainit, e)
	}
	return o
}

// event returns drainit's first event with the message; the test fails if there is none.
func (o output) event(t *testing.T, message string) event {
	t.Helper()
	for _, e := range o.drainit {
		if e.Message == message {
			return e
		}
	}
	t.Fatalf("drainit logged no %q event", message)
	return event{}
}

// has reports whether drainit logged an event with the message.
func (o output) has(message string) bool {
	for _, e := range o.drainit {
		if e.Message == message {
			return true
		}
	}
	return false
}

// appLine returns the app's first line that starts with prefix; the test fails if there is none.
func (o output) appLine(t *testing.T, prefix string) lines.Line {
	t.Helper()
	for _, l := range o.app {
		if strings.HasPrefix(l.Text, prefix) {
			return l
		}
	}
	t.Fatalf("the app printed no line starting with %q", prefix)
	return lines.Line{}
}
