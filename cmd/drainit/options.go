//go:build linux

package main

import (
	"fmt"
	"net"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/supervisor"
)

// hookOrder is the order of the hooks within a stage: exec before http, fixed so that runs are
// repeatable (a deregistering command, then a call).
var hookOrder = []config.HookKind{config.HookExec, config.HookHTTP}

// buildOptions turns the hook, ready-probe and control-server options into the supervisor's
// Options. config.Parse has already refused every value these parsers refuse; what can still
// fail here is opening the control server's listener (the port is taken, the host does not
// resolve), which is done before the app starts so that the mistake is reported, like
// config.Parse's, naming the option and the value, and drainit exits 2 without starting the app.
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
			var h hooks.Hook
			var err error
			switch kind {
			case config.HookExec:
				h, err = hooks.ParseExec(spec.Flag(), v, opts.Children)
			case config.HookHTTP:
				h, err = hooks.ParseHTTP(spec.Flag(), v)
			default:
				err = fmt.Errorf("no hook of kind %v", kind)
			}
			if err != nil {
				return opts, &config.Error{Option: cfg.OptionName(spec.Flag()), Flag: spec.Flag(), Value: v, Err: err}
			}
			*st.hooks = append(*st.hooks, h)
		}
	}
	if cfg.ReadyProbe != "" {
		p, err := hooks.ParseProbe(cfg.ReadyProbe)
		if err != nil {
			return opts, &config.Error{Option: cfg.OptionName("ready-probe"), Flag: "ready-probe", Value: cfg.ReadyProbe, Err: err}
		}
		opts.Probe = p
	}
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return opts, &config.Error{Option: cfg.OptionName("http-addr"), Flag: "http-addr", Value: cfg.HTTPAddr, Err: err}
		}
		opts.Control = ln
	}
	return opts, nil
}
