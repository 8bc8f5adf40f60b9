//go:build linux

package main

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/config"
)

func hookNames(hs []hooks.Hook) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Name())
	}
	return out
}

func mustParse(t *testing.T, args []string, env map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(args, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestBuildOptionsHooks: every hook option reaches the supervisor, in its own stage, exec before
// http within a stage whatever order they were given in, whether set by flag or variable.
func TestBuildOptionsHooks(t *testing.T) {
	env := map[string]string{"DRAINIT_OFFLINE_EXEC": "/bin/true deregister", "DRAINIT_POST_STOP_HTTP": "http://127.0.0.1:1/gone"}
	cfg := mustParse(t, []string{
		"--post-stop-exec", `["/bin/true", "cleanup"]`, "--online-http", "PUT http://127.0.0.1:1/up",
		"--offline-http", "http://127.0.0.1:1/down", "--online-exec", "true register",
		"--hook-timeout", "7s", "--http-token", "tok", "--", "/app",
	}, env)
	opts, err := buildOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for stage, got := range map[string][]hooks.Hook{"offline": opts.Offline, "online": opts.Online, "post-stop": opts.PostStop} {
		if want := []string{stage + "-exec", stage + "-http"}; !slices.Equal(hookNames(got), want) {
			t.Errorf("%s hooks %q, want %q", stage, hookNames(got), want)
		}
	}
	if opts.HookTimeout != 7*time.Second || opts.ControlToken != "tok" || opts.Children == nil || opts.Probe != nil || opts.Control != nil {
		t.Errorf("options: %+v", opts)
	}

	// Only what is set, and a stage may have one kind only.
	opts, err = buildOptions(mustParse(t, []string{"--post-stop-http", "http://127.0.0.1:1/x", "/app"}, nil))
	if err != nil || len(opts.Offline) != 0 || len(opts.Online) != 0 || !slices.Equal(hookNames(opts.PostStop), []string{"post-stop-http"}) {
		t.Errorf("one post-stop hook: %+v, %v", opts, err)
	}

	// Every hook option drainit declares is routed somewhere: none is dropped.
	var args []string
	n := 0
	for _, o := range config.Options() {
		switch {
		case strings.HasSuffix(o.Flag, "-exec"):
			args = append(args, "--"+o.Flag, "/bin/true")
		case strings.HasSuffix(o.Flag, "-http"):
			args = append(args, "--"+o.Flag, "http://127.0.0.1:1/")
		default:
			continue
		}
		n++
	}
	opts, err = buildOptions(mustParse(t, append(args, "/app"), nil))
	if got := len(opts.Offline) + len(opts.Online) + len(opts.PostStop); err != nil || got != n || n != 6 {
		t.Errorf("%d hook options, %d hooks built (%v)", n, got, err)
	}
}

// TestBuildOptionsProbeAndControl: the ready probe is parsed, and the control server's listener
// is open when buildOptions returns.
func TestBuildOptionsProbeAndControl(t *testing.T) {
	opts, err := buildOptions(mustParse(t, []string{"--ready-probe", "tcp://127.0.0.1:1", "--http-addr", "127.0.0.1:0", "/app"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Probe == nil || opts.Probe.String() != "tcp://127.0.0.1:1" {
		t.Errorf("probe %v", opts.Probe)
	}
	if opts.Control == nil {
		t.Fatal("no control listener")
	}
	defer opts.Control.Close()
	c, err := net.DialTimeout("tcp", opts.Control.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("the control listener does not accept: %v", err)
	}
	c.Close()
}

// A ready probe aimed at drainit's own control server through an address of the pod's
// interfaces (its pod IP) is refused before the app starts, as the loopback spellings are by the
// configuration's check: the probe would pass at once (tcp://, /healthz) or never (/readyz),
// whatever the app does. A control server on loopback leaves the address's port to the app.
func TestBuildOptionsProbeOfOwnServer(t *testing.T) {
	var ip string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			ip = p.Addr().String()
			break
		}
	}
	if ip == "" {
		testenv.SkipUnlessCI(t, "no IPv4 address on an interface other than loopback")
	}
	free, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	for _, c := range []struct {
		listen, probe string
		refused       bool
	}{
		{":" + port, "tcp://" + ip + ":" + port, true},
		{"0.0.0.0:" + port, "http://" + ip + ":" + port + "/healthz", true},
		{"127.0.0.1:" + port, "tcp://" + ip + ":" + port, false},
	} {
		opts, err := buildOptions(mustParse(t, []string{"--http-addr", c.listen, "--ready-probe", c.probe, "/app"}, nil))
		if opts.Control != nil {
			opts.Control.Close()
		}
		var ce *config.Error
		switch {
		case c.refused && (!errors.As(err, &ce) || ce.Flag != "ready-probe" || !strings.Contains(err.Error(), "drainit's own control server")):
			t.Errorf("--http-addr %s --ready-probe %s: %v; want it refused", c.listen, c.probe, err)
		case c.refused && opts.Control != nil:
			t.Errorf("--http-addr %s --ready-probe %s: refused, its listener left open", c.listen, c.probe)
		case !c.refused && err != nil:
			t.Errorf("--http-addr %s --ready-probe %s: %v; want it taken", c.listen, c.probe, err)
		}
	}
}

// TestBuildOptionsErrors: each error names the option as the user spelled it, and the value.
func TestBuildOptionsErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()

	// Values config.Parse lets through but the system refuses.
	cfg := mustParse(t, []string{"/app"}, map[string]string{"DRAINIT_HTTP_ADDR": addr})
	_, err = buildOptions(cfg)
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Option != "DRAINIT_HTTP_ADDR" || ce.Value != addr || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("port taken: %v", err)
	}
	// A value config.Parse refuses (a Config built by hand gets here): the same form.
	for _, c := range []struct {
		set  func(*config.Config)
		want string
	}{
		{func(c *config.Config) { c.HTTPAddr = "8099" }, `--http-addr "8099": listen tcp: address 8099: missing port in address`},
	} {
		cfg := &config.Config{}
		c.set(cfg)
		_, err := buildOptions(cfg)
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, want a *config.Error starting %q", err, c.want)
		}
	}
}

// TestBadControlAddressStartsNoApp: drainit refuses a control address it cannot listen on before
// the app starts, exits 2 and says which option and value.
func TestBadControlAddressStartsNoApp(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, addr := range []string{taken.Addr().String(), "8099"} {
		refusedAtStart(t, []string{"--http-addr", addr}, `drainit: --http-addr "`+addr+`": listen tcp`)
	}
}

// An exec hook whose program is missing or cannot be executed is refused before the app starts,
// for every exec hook option, as Run would look it up (PATH for a bare name): found only at the
// stop, the hook failed and its deregistration never happened.
func TestMissingHookProgramStartsNoApp(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "deregister")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range config.Options() {
		if !strings.HasSuffix(o.Flag, "-exec") {
			continue
		}
		n++
		for program, why := range map[string]string{
			"/nonexistent":                 "no such file or directory",
			plain:                          "permission denied",
			"drainit-test-no-such-command": "executable file not found in $PATH",
		} {
			refusedAtStart(t, []string{"--" + o.Flag, `["` + program + `", "--id", "x"]`}, `drainit: --`+o.Flag+` "[\"`+program)
			refusedAtStart(t, []string{"--" + o.Flag, program + " --id x"}, why)
		}
	}
	if n != 3 {
		t.Errorf("%d exec hook options, want 3", n)
	}
}

// refusedAtStart runs drainit with args and an app that leaves a mark, and wants exit 2, before
// the app starts, with one line on stderr that holds want (at its start, when want starts
// "drainit: ").
func refusedAtStart(t *testing.T, args []string, want string) {
	t.Helper()
	defer signal.Reset()
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	code := runCmd(append(args, "--log-format", "json", "--", "/bin/sh", "-c", "echo > "+marker), os.Stdout, stderr)
	stderr.Close()
	b, _ := os.ReadFile(stderr.Name())
	out := string(b)
	if code != 2 {
		t.Errorf("%q: exit %d, want 2; stderr %s", args, code, out)
	}
	if ok := strings.Contains(out, want) && (!strings.HasPrefix(want, "drainit: ") || strings.HasPrefix(out, want)); !ok || strings.Count(out, "\n") != 1 {
		t.Errorf("%q: stderr %q, want one line with %q", args, out, want)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%q: the app ran (%v)", args, err)
	}
}

// TestSubcommandsAreConfigs: the subcommands dispatch knows are the ones drainit check takes for
// "no app runs".
func TestSubcommandsAreConfigs(t *testing.T) {
	var got []string
	for name := range subcommands() {
		got = append(got, name)
	}
	want := slices.Clone(config.Subcommands())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("dispatch knows %q, config.Subcommands %q", got, want)
	}
}
