package check

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/drainit/drainit/internal/config"
)

// Istio's sidecar. As a regular container, istio-proxy gets SIGTERM when the pod's stop begins,
// beside the app (it has no preStop of its own): istio-agent tells Envoy to drain and, after
// terminationDrainDuration (default 5s), stops it, whether connections are open or not. From
// then on the pod has no proxy: inbound requests, which iptables still sends to Envoy's port,
// are refused, and the app's outbound calls fail
// (https://istio.io/latest/docs/reference/config/istio.mesh.v1alpha1/#ProxyConfig). So the app's
// preStop, drain and shutdown must end within terminationDrainDuration, which in turn should be
// shorter than terminationGracePeriodSeconds.
//
// With proxyMetadata EXIT_ON_ZERO_ACTIVE_CONNECTIONS: "true", istio-agent waits
// MINIMUM_DRAIN_DURATION (default 5s), then stops Envoy as soon as no connection is open: the
// proxy outlives the app's connections, but a quiet moment after the minimum ends it while the
// app is still taking new ones (in its preStop or drainit's drain).
//
// As a native sidecar (an init container with restartPolicy Always: the default from Istio 1.27
// where the nodes run Kubernetes 1.33+, istio/istio#56428; or sidecar.istio.io/nativeSidecar:
// "true") the kubelet stops istio-proxy only after the app containers have exited, and none of
// this applies. The manifest cannot show Istio's version, so the app rule is a warning unless
// the pod is known to have a regular sidecar: sidecar.istio.io/nativeSidecar: "false", or an
// istio-proxy container among its containers (an injected pod, as kubectl get shows it).
//
// The pod's settings are in the annotation proxy.istio.io/config, a ProxyConfig in YAML; a
// mesh-wide meshConfig.defaultConfig may set another default, which the manifest does not show.
//
// Evidence: sidecar.istio.io/inject "true" (label or annotation), proxy.istio.io/config, or an
// istio-proxy container; none of them with sidecar.istio.io/inject "false". Injection enabled
// for the whole namespace is not in the manifest.

const (
	istioDefaultDrain    = 5 * time.Second
	istioDefaultMinDrain = 5 * time.Second
	istioDoc             = "istio.io/latest/docs/reference/config/istio.mesh.v1alpha1/#ProxyConfig"
)

// istioProxy is what the manifest shows of a pod's Istio sidecar.
type istioProxy struct {
	drain     time.Duration
	drainSrc  string
	drainLine int
	known     bool // drain is known (read, or Istio's default)

	exitOnZero  bool
	minDrain    time.Duration
	minDrainSrc string

	regular bool // known to be a regular container, which stops beside the app
	native  bool // known to be a native sidecar, which stops after the app

	warnings []Finding
}

// istioOf reads the pod's Istio sidecar settings; nil when the manifest shows no sidecar.
func istioOf(w *Workload) *istioProxy {
	pm := &w.podMeta
	evidence := 0
	if pm.inject.line != 0 {
		switch strings.ToLower(strings.TrimSpace(pm.inject.value)) {
		case "false", "disabled":
			return nil
		case "true", "enabled":
			evidence = pm.inject.line
		}
	}
	p := &istioProxy{drain: istioDefaultDrain, minDrain: istioDefaultMinDrain, known: true}
	for i := range w.Containers {
		if w.Containers[i].Name == "istio-proxy" {
			p.regular = !w.Containers[i].Sidecar
			p.native = w.Containers[i].Sidecar
			if evidence == 0 {
				evidence = w.Containers[i].Line
			}
		}
	}
	if pm.proxyConfig.line != 0 && evidence == 0 {
		evidence = pm.proxyConfig.line
	}
	if evidence == 0 {
		return nil
	}
	switch strings.ToLower(strings.TrimSpace(pm.nativeSidecar.value)) {
	case "true":
		p.native = true
	case "false":
		p.regular = true
	}
	p.drainLine = evidence
	p.drainSrc = "Istio's default terminationDrainDuration 5s, unless meshConfig.defaultConfig sets another; " + istioDoc
	p.minDrainSrc = "default MINIMUM_DRAIN_DURATION 5s"
	if pm.proxyConfig.line != 0 {
		p.readProxyConfig(pm.proxyConfig)
	}
	return p
}

// protoDuration is a google.protobuf.Duration in its JSON form, which ProxyConfig takes: seconds
// with up to nine decimals and an "s".
var protoDuration = regexp.MustCompile(`^(\d+)(\.\d{1,9})?s$`)

// readProxyConfig reads terminationDrainDuration and the drain's proxyMetadata from the
// annotation's ProxyConfig.
func (p *istioProxy) readProxyConfig(mv metaValue) {
	at := func(n *yaml.Node) int {
		if mv.block {
			return mv.line + n.Line
		}
		return mv.line
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(mv.value), &doc); err != nil {
		p.warn(mv.line, "proxy.istio.io/config is not YAML Istio can read (%s); terminationDrainDuration is not checked",
			strings.TrimPrefix(err.Error(), "yaml: "))
		p.known = false
		return
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return
	}
	root := doc.Content[0]
	if n := mapValue(root, "terminationDrainDuration"); n != nil {
		m := protoDuration.FindStringSubmatch(strings.TrimSpace(n.Value))
		if n.Kind != yaml.ScalarNode || m == nil {
			p.warn(at(n), "terminationDrainDuration %q in proxy.istio.io/config: not a duration Istio reads: ProxyConfig takes seconds "+
				"with an s, like \"60s\" (not \"1m\" or \"60\"); terminationDrainDuration is not checked", n.Value)
			p.known = false
		} else {
			secs, _ := strconv.ParseInt(m[1], 10, 64)
			frac := time.Duration(0)
			if m[2] != "" {
				f, _ := strconv.ParseFloat("0"+m[2], 64)
				frac = time.Duration(f * float64(time.Second))
			}
			p.drain = config.AddDur(scaleDur(secs, time.Second), frac)
			p.drainSrc = "terminationDrainDuration " + n.Value + " in proxy.istio.io/config"
			p.drainLine = at(n)
		}
	}
	md := mapValue(root, "proxyMetadata")
	if md == nil || md.Kind != yaml.MappingNode {
		return
	}
	if n := mapValue(md, "EXIT_ON_ZERO_ACTIVE_CONNECTIONS"); n != nil && n.Kind == yaml.ScalarNode {
		p.exitOnZero, _ = strconv.ParseBool(strings.TrimSpace(n.Value))
	}
	if n := mapValue(md, "MINIMUM_DRAIN_DURATION"); n != nil && n.Kind == yaml.ScalarNode {
		d, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil || d < 0 {
			p.warn(at(n), "MINIMUM_DRAIN_DURATION %q in proxy.istio.io/config: not a duration istio-agent reads (like 30s or 1m); "+
				"the sidecar's drain is not checked", n.Value)
			p.known = false
			return
		}
		p.minDrain, p.minDrainSrc = d, "MINIMUM_DRAIN_DURATION "+n.Value
	}
}

func (p *istioProxy) warn(line int, format string, args ...any) {
	p.warnings = append(p.warnings, Finding{Line: line, Severity: Warning, Rule: RuleIstioDuration, Message: fmt.Sprintf(format, args...)})
}

// mapValue is a key's value in a YAML mapping (aliases followed), nil when absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := resolve(m.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			return resolve(m.Content[i+1])
		}
	}
	return nil
}

// istioPod reports the pod-level Istio findings: unreadable settings, and a drain duration that
// outlasts the grace period.
func istioPod(w *Workload) []Finding {
	p := istioOf(w)
	if p == nil {
		return nil
	}
	out := p.warnings
	if p.known && !p.exitOnZero && w.Grace > 0 && p.drain >= w.Grace {
		out = append(out, Finding{Line: p.drainLine, Severity: Warning, Rule: RuleIstioDrainGrace, Message: fmt.Sprintf(
			"the istio-proxy sidecar waits its whole drain, %s (%s), at every stop even with no connection open, and that is not "+
				"less than terminationGracePeriodSeconds %s: every stop of the pod lasts the full grace period and istio-proxy ends "+
				"with the kubelet's SIGKILL; make terminationDrainDuration shorter than the grace period (and longer than the app's stop), "+
				"or set proxyMetadata EXIT_ON_ZERO_ACTIVE_CONNECTIONS: \"true\"", fmtDur(p.drain), p.drainSrc, fmtDur(w.Grace))})
	}
	return out
}

// istioContainer reports a container that needs the network longer than the sidecar stays: its
// preStop, drainit's drain and its app's shutdown, all counted from the start of the pod's stop.
func (k *containerCheck) istioContainer(w *Workload) {
	if k.grace <= 0 || k.c.Name == "istio-proxy" || k.c.Sidecar {
		return
	}
	p := istioOf(w)
	if p == nil || p.native || !p.known {
		return
	}
	// New connections may arrive through the preStop and drainit's drain; the app's own
	// shutdown still has requests in flight and may call out.
	var inbound time.Duration
	var parts []string
	if k.ps.kind == hookSleep {
		if k.ps.min == forever {
			return // prestop-exceeds-grace says it
		}
		inbound = k.ps.min
		parts = append(parts, k.ps.describe())
	}
	if dc := k.dc; dc != nil {
		inbound = config.AddDur(inbound, dc.drain.d)
		parts = append(parts, "drainit's drain "+fmtDur(dc.drain.d))
	}
	total, inboundParts := inbound, parts
	if k.app != nil {
		total = config.AddDur(total, k.app.d)
		parts = append(parts, fmt.Sprintf("app shutdown %s (%s)", fmtDur(k.app.d), k.app.src))
	}
	sev, hedge := Warning, " — unless istio-proxy runs as a native sidecar (Istio 1.27+ on Kubernetes 1.33+ nodes, or "+
		"sidecar.istio.io/nativeSidecar: \"true\"), which the kubelet stops after the app"
	if p.regular {
		sev, hedge = Error, ""
	}
	if p.exitOnZero {
		if inbound <= p.minDrain {
			return
		}
		k.add(p.drainLine, sev, RuleIstioDrainApp, "with EXIT_ON_ZERO_ACTIVE_CONNECTIONS the istio-proxy sidecar stops as soon as no "+
			"connection is open after %s (%s), but this container takes new connections for %s (%s): a quiet moment ends the proxy and "+
			"the requests that arrive after it are refused; set proxyMetadata MINIMUM_DRAIN_DURATION to at least %ds%s",
			fmtDur(p.minDrain), p.minDrainSrc, fmtDur(inbound), strings.Join(inboundParts, " + "), ceilSeconds(inbound), hedge)
		return
	}
	if total <= p.drain || len(parts) == 0 {
		return
	}
	what := "its outbound calls (a database, other services) fail while it shuts down, and the responses still in flight are cut"
	if inbound > p.drain {
		what = "the requests that still arrive while it drains are refused, and its outbound calls fail"
	}
	need := ceilSeconds(total)
	within := fmt.Sprintf("below terminationGracePeriodSeconds %s", fmtDur(k.grace))
	if seconds(need) >= k.grace {
		within = fmt.Sprintf("and terminationGracePeriodSeconds (%s) above it", fmtDur(k.grace))
	}
	k.add(p.drainLine, sev, RuleIstioDrainApp, "the istio-proxy sidecar stops %s after the pod's stop begins (%s), but this container "+
		"needs it for %s (%s): from then on %s; set terminationDrainDuration to at least %ds in proxy.istio.io/config (%s), "+
		"or set proxyMetadata EXIT_ON_ZERO_ACTIVE_CONNECTIONS: \"true\"%s",
		fmtDur(p.drain), p.drainSrc, fmtDur(total), strings.Join(parts, " + "), what, need, within, hedge)
}
