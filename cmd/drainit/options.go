//go:build linux

package main

import (
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/supervisor"
)

// hookOrder is the order of the hooks within a stage: exec before http, fixed so that runs are
// repeatable (a deregistering command, then a call).
var hookOrder = []config.HookKind{config.HookExec, config.HookHTTP}

// buildOptions turns the hook, ready-probe and control-server options, as config.Parse has read
// them, into the supervisor's Options. What can still fail here is what depends on this system:
// an exec hook's program that is missing or not executable, and opening the control server's
// listener (the port is taken, the host does not resolve). Both are checked before the app
// starts so that the mistake is reported, like config.Parse's, naming the option and the value,
// and drainit exits 2 without starting the app.
func buildOptions(cfg *config.Config) (supervisor.Options, error) {
	opts := supervisor.Options{HookTimeout: cfg.HookTimeout, ControlToken: cfg.HTTPToken, Children: &hooks.Children{}}
	stages := []struct {
		stage config.HookStage
		hooks *[]hooks.Hook
	}{
		{config.StageOffline, &opts.Offline}, {config.StageOnline, &opts.Online}, {config.StagePostStop, &opts.PostStop},
	}
	for _, st := range stages {
		for _, kind := range hookOrder {
			spec := config.HookSpec{Stage: st.stage, Kind: kind}
			v, ok := cfg.Hooks[spec]
			if !ok {
				continue
			}
			if kind == config.HookHTTP {
				*st.hooks = append(*st.hooks, hooks.NewHTTP(spec.Flag(), v.Call))
				continue
			}
			h := hooks.NewExec(spec.Flag(), v.Argv, opts.Children)
			if err := hooks.CheckProgram(h); err != nil {
				return opts, &config.Error{Option: cfg.OptionName(spec.Flag()), Flag: spec.Flag(), Value: v.Spec, Err: err}
			}
			*st.hooks = append(*st.hooks, h)
		}
	}
	if cfg.Probe != nil {
		opts.Probe = hooks.NewProbe(*cfg.Probe)
	}
	if cfg.HTTPAddr != "" {
		if err := descriptorsForListener(); err != nil {
			return opts, &config.Error{Option: cfg.OptionName("http-addr"), Flag: "http-addr", Value: cfg.HTTPAddr, Err: err}
		}
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return opts, &config.Error{Option: cfg.OptionName("http-addr"), Flag: "http-addr", Value: cfg.HTTPAddr, Err: err}
		}
		opts.Control = ln
		// The configuration's check catches a probe of the control server's port at a loopback
		// spelling; here, with the interfaces known, at the pod's own address too.
		if to, ok := hooks.LocalTarget(opts.Probe); ok && listensFor(ln.Addr(), to) {
			ln.Close()
			opts.Control = nil
			return opts, &config.Error{Option: cfg.OptionName("ready-probe"), Flag: "ready-probe", Value: cfg.ReadyProbe,
				Err: fmt.Errorf("that is drainit's own control server (%s %q, on %s), not the app", cfg.OptionName("http-addr"), cfg.HTTPAddr, ln.Addr())}
		}
	}
	return opts, nil
}

// listensFor reports whether a connection to `to` reaches the listener at addr, as a connection
// reaches a listener the adaptive drain watches.
func listensFor(addr net.Addr, to netip.AddrPort) bool {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	l := ta.AddrPort()
	return config.Endpoint{Addr: l.Addr().Unmap().WithZone(""), Port: l.Port()}.Matches(to.Addr().WithZone(""), to.Port())
}

// descriptorsForListener refuses a control server that RLIMIT_NOFILE leaves no room for. The
// listener is the first file the Go poller takes, which opens its epoll and eventfd descriptors
// then, and where it cannot the runtime aborts drainit with a goroutine dump (seen at a limit
// of 8); each connection needs one more. Descriptors are given lowest first, so the one a probe
// open gets is about how many are open.
func descriptorsForListener() error {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return nil
	}
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		_ = unix.Close(fd)
	}
	// The poller's two, the listener, a connection, and one to start the app with (measured: a
	// limit one lower, and the app could not be started: exit 126).
	if need := uint64(fd) + 5; err != nil || need > lim.Cur {
		return fmt.Errorf("RLIMIT_NOFILE is %d: too few open files for the control server (its listener, a connection and the Go runtime's poller, beside the app's start); raise it (ulimit -n, podman run --ulimit nofile=)", lim.Cur)
	}
	return nil
}
