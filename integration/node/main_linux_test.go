package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/cluster"
	"github.com/drainit/drainit/integration/testbin"
	"github.com/drainit/drainit/integration/testenv"
)

// The images TestMain builds and imports into containerd's k8s.io namespace.
const (
	imageTerm  = "localhost/drainit-node:test"      // drainit (ENTRYPOINT) and testapp; no STOPSIGNAL
	imageQuit  = "localhost/drainit-node-quit:test" // the same with STOPSIGNAL SIGQUIT, as FROM nginx
	imagePause = "localhost/drainit-node-pause:test"
	// nodeName is the kubelet's --hostname-override: a static pod's name is NAME-nodeName.
	nodeName = "drainit-node"
)

// suite is set up once by TestMain and only read by the tests.
var suite node

// node is a containerd and a standalone kubelet of the run's own, or the reason there are none.
type node struct {
	skip string // why the tests cannot run here (no root, a missing program)
	err  error  // set-up failed although it should work: a test failure, never a skip
	dir  string // the run's directory: configs, manifests, logs, containerd's and the kubelet's state

	drainit string // the static drainit on the host (for `drainit check` on a test's manifest)
	ctr     string
	sock    string // containerd's socket

	containerd, kubelet *exec.Cmd
	containerdLog       string            // containerd's log file (logrus text)
	kubeletLog          string            // the kubelet's log file (klog)
	readOnlyPort        int               // the kubelet's read-only API: /pods
	sysctls             map[string]string // what kubeletSysctls held before the kubelet started
	events              *events

	// A node in another network namespace (cluster_linux_test.go): its containerd and kubelet
	// run there, under its name, and its kubelet's health is asked with client.
	netns  string
	name   string
	client *http.Client
}

func TestMain(m *testing.M) {
	suite = setUp()
	code := m.Run()
	testbin.Cleanup()
	if err := suite.tearDown(); err != nil {
		fmt.Fprintf(os.Stderr, "node tests: cleaning up: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// need returns the node, or ends the test: a skip when no kubelet can run here (a failure under
// CI=true), a failure when the set-up broke.
func need(t testing.TB) *node {
	t.Helper()
	if suite.skip != "" {
		testenv.SkipUnlessCI(t, suite.skip)
	}
	if suite.err != nil {
		t.Fatal(suite.err)
	}
	return &suite
}

// setUp finds the programs, builds the kubelet (cached), drainit, testapp and the images, and
// starts containerd and the kubelet.
func setUp() node {
	if os.Geteuid() != 0 {
		return node{skip: "needs root: the tests run containerd, runc and a kubelet"}
	}
	paths := map[string]string{}
	for _, name := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "podman"} {
		p, err := testenv.LookPath(name)
		if err != nil {
			return node{skip: fmt.Sprintf("%v (Debian: apt-get install --no-install-recommends containerd runc podman)", err)}
		}
		paths[name] = p
	}
	n := node{ctr: paths["ctr"]}
	kubelet, err := kubeletBinary()
	if err != nil {
		n.err = err
		return n
	}
	if n.dir, err = os.MkdirTemp("", "drainit-node-"); err != nil {
		n.err = fmt.Errorf("creating the run's directory: %w", err)
		return n
	}
	n.sock = filepath.Join(n.dir, "containerd.sock")
	n.containerdLog = filepath.Join(n.dir, "containerd.log")
	n.kubeletLog = filepath.Join(n.dir, "kubelet.log")
	for _, d := range []string{"manifests", "staging", "pod-logs", "context", "p"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			n.err = fmt.Errorf("creating %s: %w", d, err)
			return n
		}
	}
	if n.err = n.startContainerd(paths["runc"]); n.err != nil {
		return n
	}
	if n.err = n.buildImages(paths["podman"], paths["runc"]); n.err != nil {
		return n
	}
	if n.sysctls, n.err = readSysctls(); n.err != nil {
		return n
	}
	n.err = n.startKubelet(kubelet)
	return n
}

// kubeletSysctls are the kernel settings a kubelet writes at its start unless
// protectKernelDefaults (which fails the start instead) is set: overcommit always, a panic on an
// oops and a reboot 10 s after any panic among them (setupKernelTunables in
// pkg/kubelet/cm/container_manager_linux.go, v1.33.13). They are not namespaced, so a test run
// would leave them on the machine; tearDown writes back what they were.
var kubeletSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
	"kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

func readSysctls() (map[string]string, error) {
	m := map[string]string{}
	for _, name := range kubeletSysctls {
		b, err := os.ReadFile("/proc/sys/" + name)
		if err != nil {
			return nil, fmt.Errorf("reading the sysctl the kubelet sets: %w", err)
		}
		m[name] = strings.TrimSpace(string(b))
	}
	return m, nil
}

// restoreSysctls writes back the kernel settings the kubelet changed. Two runs at once can
// restore each other's kubelet's values: the later run saw them as the machine's.
func (n *node) restoreSysctls() error {
	var errs []error
	for name, v := range n.sysctls {
		if err := os.WriteFile("/proc/sys/"+name, []byte(v+"\n"), 0); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s to %s: %w", name, v, err))
		}
	}
	return errors.Join(errs...)
}

// kubeletBinary is $DRAINIT_KUBELET, else the cached build of scripts/kubelet.sh.
func kubeletBinary() (string, error) {
	if p := os.Getenv("DRAINIT_KUBELET"); p != "" {
		return p, nil
	}
	return cluster.K8sCommand("kubelet")
}

// fill writes the project's template name into the run's directory with the values replaced.
func (n *node) fill(name string, values ...string) (string, error) {
	tmpl, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("reading the project's %s: %w", name, err)
	}
	out := filepath.Join(n.dir, name)
	values = append(values, "@DIR@", n.dir)
	if err := os.WriteFile(out, []byte(strings.NewReplacer(values...).Replace(string(tmpl))), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", out, err)
	}
	return out, nil
}

// startContainerd starts the run's containerd and its event stream, and waits until it answers.
func (n *node) startContainerd(runc string) error {
	conf, err := n.fill("containerd.toml", "@RUNC@", runc, "@PAUSE@", imagePause)
	if err != nil {
		return err
	}
	if n.containerd, err = n.daemon(n.containerdLog, "containerd", "--config", conf); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := n.run(context.Background(), n.ctr, "--address", n.sock, "version"); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("containerd did not answer within 30s: %w (log: %s)", err, tail(n.containerdLog))
		}
		time.Sleep(50 * time.Millisecond) // polling for the socket: there is nothing to wait on
	}
	n.events, err = watchEvents(n.ctr, n.sock)
	return err
}

// daemon starts one of the node's long-running programs with its stdout and stderr in logPath,
// in the node's network namespace if it has one (nsenter execs the program: the process is the
// program's, and its mount namespace the machine's, which containerd and the kubelet share).
func (n *node) daemon(logPath, name string, args ...string) (*exec.Cmd, error) {
	if n.netns != "" {
		args = append([]string{"--net=/var/run/netns/" + n.netns, "--", name}, args...)
		name = "nsenter"
	}
	return startLogged(logPath, name, args...)
}

// startLogged starts a long-running program with its stdout and stderr in logPath.
func startLogged(logPath, name string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a Ctrl-C on `go test` reaches the test binary, whose cleanup stops
	// it in order, not the daemon behind its back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return cmd, nil
}

// buildImages builds the static binaries and the images with podman (storage of the run's own),
// saves each image to a tar and imports it into containerd.
func (n *node) buildImages(podman, runc string) error {
	buildCtx := filepath.Join(n.dir, "context")
	// drainit with its own entry point, as it ships, and the test app (testbin).
	if err := testbin.CopyInto(buildCtx); err != nil {
		return err
	}
	n.drainit = filepath.Join(buildCtx, "drainit")
	files := map[string]string{
		imageTerm: "FROM scratch\nCOPY drainit testapp /\nENTRYPOINT [\"/drainit\"]\n",
		// What every image FROM nginx (or php-fpm) inherits.
		imageQuit: "FROM scratch\nCOPY drainit testapp /\nENTRYPOINT [\"/drainit\"]\nSTOPSIGNAL SIGQUIT\n",
		// The pod sandbox only has to exist until the kubelet removes it (with SIGKILL).
		imagePause: "FROM scratch\nCOPY testapp /\nENTRYPOINT [\"/testapp\", \"sleep\", \"876000h\"]\n",
	}
	// podman's own store, in one-letter directories: podman refuses a --runroot longer than 50
	// characters, which /tmp/drainit-node-NNNNNNNNNN/podman/run came within 11 of (a TMPDIR of
	// /work/scratch/tmp passed it).
	store := filepath.Join(n.dir, "p")
	pm := []string{"--root", filepath.Join(store, "s"), "--runroot", filepath.Join(store, "r"),
		"--storage-driver", "overlay", "--cgroup-manager", "cgroupfs", "--runtime", runc,
		"--events-backend", "none", "--tmpdir", filepath.Join(store, "t")}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, image := range []string{imageTerm, imageQuit, imagePause} {
		name := strings.TrimSuffix(filepath.Base(image), ":test")
		cf := filepath.Join(n.dir, name+".Containerfile")
		if err := os.WriteFile(cf, []byte(files[image]), 0o644); err != nil {
			return err
		}
		if _, err := n.run(ctx, podman, append(pm, "build", "--pull=never", "--quiet", "-f", cf, "-t", image, buildCtx)...); err != nil {
			return err
		}
		// One image per archive: ctr 1.6 imports a multi-image docker-archive with every tag
		// pointing at the first image's manifest.
		tar := filepath.Join(n.dir, name+".tar")
		if _, err := n.run(ctx, podman, append(pm, "save", "--quiet", "-o", tar, image)...); err != nil {
			return err
		}
	}
	return n.importImages(n.dir)
}

// importImages imports the images buildImages saved in dir into the node's containerd.
func (n *node) importImages(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, image := range []string{imageTerm, imageQuit, imagePause} {
		tar := filepath.Join(dir, strings.TrimSuffix(filepath.Base(image), ":test")+".tar")
		if _, err := n.run(ctx, n.ctr, "--address", n.sock, "-n", "k8s.io", "images", "import", tar); err != nil {
			return err
		}
	}
	return nil
}

// startKubelet starts the kubelet on free loopback ports, standalone unless args give it an API
// server, and waits for its healthz.
func (n *node) startKubelet(kubelet string, args ...string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	n.readOnlyPort = ports[1]
	conf, err := n.fill("kubelet.yaml", "@PORT@", strconv.Itoa(ports[0]),
		"@READONLYPORT@", strconv.Itoa(ports[1]), "@HEALTHZPORT@", strconv.Itoa(ports[2]))
	if err != nil {
		return err
	}
	// -v=3: "Running preStop hook" is logged at level 3, "Killing container with a grace period"
	// at 2.
	name, client := nodeName, http.DefaultClient
	if n.name != "" {
		name, client = n.name, n.client
	}
	n.kubelet, err = n.daemon(n.kubeletLog, kubelet, append([]string{"--config", conf,
		"--root-dir", filepath.Join(n.dir, "kubelet"), "--cert-dir", filepath.Join(n.dir, "pki"),
		"--hostname-override", name, "--v=3"}, args...)...)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[2])
	for {
		res, err := client.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kubelet's %s did not answer 200 within 60s (%v); its log ends:\n%s", url, err, tail(n.kubeletLog))
		}
		time.Sleep(100 * time.Millisecond) // polling: the kubelet has no readiness signal to wait on
	}
}

// freePorts returns n loopback TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// run runs a command that must succeed and returns its stdout.
func (n *node) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.String(), nil
}

// tearDown stops the kubelet, removes every container left (a test that failed half-way), stops
// containerd, unmounts what they left mounted and removes the run's directory.
func (n *node) tearDown() error {
	if n.dir == "" {
		return nil
	}
	var errs []error
	stop := func(cmd *exec.Cmd) {
		if cmd == nil || cmd.Process == nil {
			return
		}
		_ = cmd.Process.Signal(unix.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	stop(n.kubelet)
	if err := n.restoreSysctls(); err != nil {
		errs = append(errs, err)
	}
	if n.containerd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := []string{"--address", n.sock, "-n", "k8s.io"}
		out, err := n.run(ctx, n.ctr, append(c, "containers", "list", "--quiet")...)
		if err != nil {
			errs = append(errs, err)
		}
		for _, id := range strings.Fields(out) {
			// Kill and delete the task (and with it its shim), then the container.
			_, _ = n.run(ctx, n.ctr, append(c, "tasks", "kill", "--signal", "SIGKILL", "--all", id)...)
			_, _ = n.run(ctx, n.ctr, append(c, "tasks", "delete", "--force", id)...)
			if _, err := n.run(ctx, n.ctr, append(c, "containers", "delete", id)...); err != nil {
				errs = append(errs, err)
			}
		}
		if n.events != nil {
			n.events.stop()
		}
		stop(n.containerd)
	}
	if err := unmountUnder(n.dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(n.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", n.dir, err))
	}
	return errors.Join(errs...)
}

// unmountUnder lazily unmounts every mount point under dir, deepest first: the kubelet bind-mounts
// its root directory onto itself, containerd mounts each container's rootfs and /dev/shm.
func unmountUnder(dir string) error {
	points, err := testenv.MountPoints("/proc", os.Getpid(), dir)
	if err != nil {
		return err
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// tail is the end of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// taskEvent is one of containerd's task events, as `ctr events` prints them.
type taskEvent struct {
	topic       string // /tasks/exit, /tasks/delete, …
	ContainerID string `json:"container_id"`
	// The container's ID for its main process; an exec'd process (an exec preStop hook) has its
	// own.
	ID string `json:"id"`
	// The host's pid of the process that started (/tasks/start) or exited (/tasks/exit).
	Pid int `json:"pid"`
	// Absent from the event when 0.
	ExitStatus int       `json:"exit_status"`
	ExitedAt   time.Time `json:"exited_at"`
}

// events collects containerd's task events from `ctr events`, which runs for the whole run: the
// kubelet forgets a removed static pod at once, so a pod's exit is only seen here.
type events struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	seen    []taskEvent
	changed chan struct{} // closed and replaced on each new event
}

func watchEvents(ctr, sock string) (*events, error) {
	e := &events{cmd: exec.Command(ctr, "--address", sock, "events"), changed: make(chan struct{})}
	out, err := e.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("ctr events: %w", err)
	}
	go e.read(out)
	return e, nil
}

// read parses lines like
// 2026-11-23 08:54:01.112351157 +0000 UTC k8s.io /tasks/exit {"container_id":"…",…}.
func (e *events) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 7)
		if len(fields) < 7 || !strings.HasPrefix(fields[5], "/tasks/") {
			continue
		}
		ev := taskEvent{topic: fields[5]}
		if json.Unmarshal([]byte(fields[6]), &ev) != nil {
			continue
		}
		e.mu.Lock()
		e.seen = append(e.seen, ev)
		close(e.changed)
		e.changed = make(chan struct{})
		e.mu.Unlock()
	}
}

// wait returns the first event on topic for the container, waiting up to timeout for it.
func (e *events) wait(topic, id string, timeout time.Duration) (taskEvent, bool) {
	deadline := time.After(timeout)
	for {
		e.mu.Lock()
		for _, ev := range e.seen {
			if ev.topic == topic && ev.ContainerID == id && (ev.ID == "" || ev.ID == id) {
				e.mu.Unlock()
				return ev, true
			}
		}
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			return taskEvent{}, false
		}
	}
}

func (e *events) stop() {
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
}
