package check

import (
	"fmt"
	"path"
	"strings"

	"github.com/drainit/drainit/signals"
)

// nginx: its graceful stop is SIGQUIT (the STOPSIGNAL of its official image, which every image
// FROM it inherits; SIGTERM is its fast stop, which waits for nothing). Its workers then finish
// the requests in hand, and with no worker_shutdown_timeout (or 0) wait with no limit: a
// websocket, a long poll or a slow download holds them. apps.md has the sources.
//
// The directive belongs in the main context, so the manifest shows it only in -g (nginx -g
// 'worker_shutdown_timeout 20s;') or in a main configuration file mounted from a ConfigMap of the
// same input: the file -c names, or the image's default /etc/nginx/nginx.conf
// (/opt/bitnami/nginx/conf/nginx.conf in Bitnami's). A main configuration that includes other
// files may set it in one of them: then nothing is known. The stop signal rules
// (stop-signal-image-quit, stop-signal-not-trigger) say whether nginx gets SIGQUIT; these rules
// only skip an nginx that is known to get another signal.
//
// Evidence: an "nginx" (or "nginx-debug") word in command or args, or an official nginx image
// (…/nginx, nginxinc/nginx-unprivileged) run with its own command (no command, no args).

const nginxDoc = "nginx.org/en/docs/ngx_core_module.html#worker_shutdown_timeout"

func (k *containerCheck) nginxStop(c *Container, words []word, env envMap) *appStop {
	args, line, found := programArgs(words, env, func(b string) bool { return b == "nginx" || b == "nginx-debug" })
	if !found {
		if c.Command != nil || c.Args != nil || !nginxImage(c.Image) {
			return nil
		}
		line = c.ImageLine // the image's CMD is nginx
	}
	if line == 0 {
		line = c.Line
	}
	a := &appStop{name: "nginx", line: line, fix: "worker_shutdown_timeout N", doc: "in nginx.conf's main context, " + nginxDoc}
	if !k.nginxGraceful() {
		return a // a fast stop waits for nothing
	}
	// nginx's own options: -g directives and -c file, each with its value attached or next.
	var globals []word
	conf := ""
	for i := 0; i < len(args); i++ {
		s := args[i].s
		if len(s) < 2 || s[0] != '-' || !strings.ContainsRune("gcpse", rune(s[1])) {
			continue
		}
		val, at := s[2:], args[i].line
		if val == "" && i+1 < len(args) {
			i++
			val, at = args[i].s, args[i].line
		}
		switch s[1] {
		case 'g':
			globals = append(globals, word{val, at})
		case 'c':
			conf = val
		}
	}
	var m nginxMain
	src := ""
	for _, g := range globals {
		if unseen(g.s) {
			return a
		}
		if gm := scanNginx(g.s, g.line, false); gm.set {
			m, src = gm, "nginx -g"
		}
	}
	if !m.set {
		var f *mountedConf
		switch {
		case conf != "" && unseen(conf):
			return a
		case conf != "":
			if !path.IsAbs(conf) {
				conf = path.Join("/etc/nginx", conf) // the official build's prefix
			}
			f = c.file(conf)
		default:
			if f = c.file("/etc/nginx/nginx.conf"); f == nil {
				f = c.file("/opt/bitnami/nginx/conf/nginx.conf")
			}
		}
		if f == nil || f.nginx.bad {
			return a // the main configuration is not in the manifest
		}
		m, src = f.nginx, "nginx.conf ("+f.describe()+")"
		if !m.set {
			if !m.include {
				a.line = m.line
				a.none = fmt.Sprintf("nginx's main configuration (%s) has no worker_shutdown_timeout (nginx's default: none)", f.describe())
				a.unbounded = true
			}
			return a
		}
	}
	what := fmt.Sprintf("worker_shutdown_timeout %s in %s", m.value, src)
	if m.args != 1 {
		a.warn(m.line, RuleNginxDuration, "worker_shutdown_timeout with %d arguments in %s: nginx wants exactly one and refuses to start "+
			"(invalid number of arguments); the shutdown time is not checked", m.args, src)
		return a
	}
	d, err := parseNginxTime(m.value)
	if err != nil {
		a.warn(m.line, RuleNginxDuration, "%s: %v; nginx refuses to start on it (invalid value); the shutdown time is not checked", what, err)
		return a
	}
	if d == 0 {
		a.line, a.unbounded = m.line, true
		a.none = "worker_shutdown_timeout is 0 in " + src + ", which sets no timer: the same as none"
		return a
	}
	a.at = &appTime{d: d, src: "nginx " + what, line: m.line}
	return a
}

// nginxGraceful says whether nginx may get SIGQUIT, its graceful stop: not when drainit's
// --stop-signal, or else lifecycle.stopSignal, is known to be another signal. (drainit's
// --rewrite is not followed.)
func (k *containerCheck) nginxGraceful() bool {
	if dc := k.dc; dc != nil && dc.stopSignal.known && dc.stopSignal.raw != "" {
		sig, err := signals.Parse(dc.stopSignal.raw)
		return err == nil && sig == signals.SIGQUIT
	}
	if k.c.StopSignalLine != 0 {
		return k.c.StopSignal == "SIGQUIT"
	}
	return true
}

// nginxImage says whether an image is an official nginx image by its repository's last path
// component: nginx (docker.io's, Bitnami's, Chainguard's) or nginx-unprivileged. Images that
// only start with "nginx" (nginx-ingress, nginx-prometheus-exporter) run something else.
func nginxImage(image string) bool {
	ref, _ := imageName(image)
	last := ref[strings.LastIndexByte(ref, '/')+1:]
	return last == "nginx" || last == "nginx-unprivileged"
}
