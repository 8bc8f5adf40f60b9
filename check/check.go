// Package check reads Kubernetes manifests and finds termination-timing mistakes: a preStop
// sleep that eats the grace period, an app shutdown that cannot fit after it, drainit configured
// against a different grace period than the pod's, a preStop aimed at a control server that is
// off, a stop signal that is not one of drainit's triggers, and the like. Each finding spells out
// the arithmetic.
//
// The model of a stop is the kubelet's (see docs/kubelet-stop-sequence.md): the
// preStop hook runs first; the app then gets max(grace - preStop, 2s) between the stop signal
// and SIGKILL. A native sidecar (an init container with restartPolicy Always) gets its stop
// signal only once the main containers have stopped, within the same grace period; what the
// check takes from the kubelet and the API server is in kubernetes.md, with its sources.
//
// drainit's own settings (its flags in command and args, its DRAINIT_* variables) are read by
// drainit's parser and validation (internal/config), not by the check: every configuration
// drainit refuses at start is a drainit-config error with drainit's message, and an option added
// to drainit is known to the check at once. See drainitconf.go for what a manifest cannot show.
//
// The manifests are read as YAML nodes, not as k8s.io/api types, so that every finding can
// name its line.
package check

import (
	"cmp"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// Severity says how bad a finding is: errors make `drainit check` exit 1.
type Severity string

// The severities, from worst.
const (
	Error   Severity = "error"   // the pod will be SIGKILLed mid-shutdown, or a hook cannot work
	Warning Severity = "warning" // time is wasted or a value is probably not what was meant
	Info    Severity = "info"    // nothing is wrong, but nothing drains either
)

// The rules' ids, as findings carry them.
const (
	RuleGraceZero        = "grace-zero"              // terminationGracePeriodSeconds: 0
	RuleGraceNegative    = "grace-negative"          // terminationGracePeriodSeconds below 0, taken as 1
	RulePreStopGrace     = "prestop-exceeds-grace"   // a preStop sleep longer than the grace period
	RulePreStopMinimum   = "prestop-leaves-minimum"  // a preStop sleep leaves the app only the kubelet's 2s
	RuleShutdownGrace    = "shutdown-exceeds-grace"  // preStop + the app's shutdown do not fit
	RuleSidecarGrace     = "sidecar-exceeds-grace"   // a native sidecar's stop does not fit after the containers'
	RuleDrainitConfig    = "drainit-config"          // drainit would refuse its configuration
	RuleDrainitGrace     = "drainit-grace-mismatch"  // drainit's grace period is not the pod's
	RulePreStopServer    = "prestop-server"          // preStop aimed at a control server that is off or elsewhere
	RulePreStopToken     = "prestop-token"           // preStop without the control server's token
	RuleControlNoToken   = "control-no-token"        // the control server open beyond loopback with no token
	RuleProbeUnreachable = "probe-unreachable"       // a probe of drainit's control server the kubelet cannot reach
	RuleNoShell          = "no-shell"                // exec preStop needs sh/sleep in an image without them
	RuleNoDrain          = "no-drain"                // nothing delays the stop for endpoint removal
	RuleSpringDuration   = "spring-duration"         // a Spring Boot shutdown timeout that is likely wrong
	RuleAdaptiveUDP      = "adaptive-drain-udp"      // an adaptive drain in a container that serves UDP: fixed
	RuleAdaptiveMesh     = "adaptive-drain-mesh"     // an adaptive drain counting connections behind a mesh's sidecar
	RuleAdaptiveReady    = "adaptive-drain-ready"    // an adaptive drain whose pod stays ready: its readiness probe is not /readyz
	RuleAutoHostNetwork  = "quiet-auto-host-network" // --drain-quiet auto in a hostNetwork pod: no rate before the drain
	RuleProbeGrace       = "probe-grace-short"       // a liveness or startup probe's grace period shorter than drainit's stop

	RuleStopSignalNotTrigger = "stop-signal-not-trigger" // lifecycle.stopSignal is not one of drainit's triggers
	RuleStopSignalImage      = "stop-signal-image"       // an image (by name) whose STOPSIGNAL is no trigger: nginx, httpd, haproxy
	RuleStopSignalInvalid    = "stop-signal-invalid"     // a lifecycle.stopSignal the API server rejects
	RuleForwardMasterWorker  = "forward-master-worker"   // haproxy (its master passes signals on) under --forward group

	RuleSignalsSandbox = "prestop-signals-sandbox" // a preStop's kill of PID 1: the sandbox, with shareProcessNamespace
)

// Finding is one thing the check found, with where it is and the arithmetic in Message.
type Finding struct {
	File      string   `json:"file"`
	Line      int      `json:"line"`
	Severity  Severity `json:"severity"`
	Rule      string   `json:"rule"`
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Container string   `json:"container,omitempty"` // empty for a finding about the whole pod
	Message   string   `json:"message"`
}

// Check applies every rule to the workloads and returns the findings in the order of the
// workloads, then of their containers; the pod-level finding comes first.
func Check(ws []Workload) []Finding {
	var out []Finding
	for i := range ws {
		out = append(out, checkWorkload(&ws[i])...)
	}
	return out
}

func checkWorkload(w *Workload) []Finding {
	var out []Finding
	if w.GraceSet && w.Grace == 0 {
		sts := ""
		if w.Kind == "StatefulSet" {
			sts = " (and the StatefulSet may start its replacement, same identity, beside it)"
		}
		out = append(out, Finding{Line: w.GraceLine, Severity: Error, Rule: RuleGraceZero, Message: "terminationGracePeriodSeconds is 0: " +
			"every delete becomes a force delete; the API forgets the pod at once while its containers still run" + sts +
			", the preStop hook gets at most 1s and the app 2s before SIGKILL; " +
			"give it the seconds the app needs to stop (the default is 30)"})
	}
	if w.GraceSet && w.Grace < 0 {
		// pkg/api/pod/warnings.go warns and stores the value; the pod strategy's
		// CheckGracefulDelete deletes with 1s instead (kubernetes.md).
		out = append(out, Finding{Line: w.GraceLine, Severity: Error, Rule: RuleGraceNegative, Message: fmt.Sprintf(
			"terminationGracePeriodSeconds is %d: the API server accepts it with a warning and deletes the pod with a grace "+
				"period of 1s instead, so the preStop hook gets at most 1s and the app 2s before SIGKILL; "+
				"give it the seconds the app needs to stop (the default is 30)", int64(w.Grace/time.Second))})
	}
	out = append(out, istioPod(w)...)
	// The main containers stop at once; the sidecars, last declared first, each once the main
	// containers and the sidecars declared after it have stopped (kubernetes.md).
	var before stopBefore
	for i := range w.Containers {
		c := &w.Containers[i]
		if c.Sidecar {
			continue
		}
		fs, end := checkContainerAfter(w, c, stopBefore{})
		before = before.later(end, c)
		out = append(out, named(fs, c)...)
	}
	for i := len(w.Containers) - 1; i >= 0; i-- {
		c := &w.Containers[i]
		if !c.Sidecar {
			continue
		}
		fs, end := checkContainerAfter(w, c, before)
		before = before.later(end, c)
		out = append(out, named(fs, c)...)
	}
	for i := range out {
		out[i].File, out[i].Kind, out[i].Name = w.File, w.Kind, w.Name
	}
	// In file order, so that the output reads along with the manifest.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// named marks findings as the container's.
func named(fs []Finding, c *Container) []Finding {
	for i := range fs {
		fs[i].Container = c.Name
	}
	return fs
}

// stopBefore is what the kubelet waits for before it sends a native sidecar its stop signal:
// the main containers, and the sidecars declared after it, to have stopped. d is when the last
// of them may end, counted from the start of the pod's stop as the timing rules count (the
// preStop, drainit's drain, the app's known shutdown), at most the grace period; who names it.
type stopBefore struct {
	d   time.Duration
	who *Container
}

// later is b, or c's stop when that ends later.
func (b stopBefore) later(end time.Duration, c *Container) stopBefore {
	if end > b.d {
		return stopBefore{d: end, who: c}
	}
	return b
}

// containerCheck holds what the rules know about one container.
type containerCheck struct {
	c     *Container
	grace time.Duration
	ps    preStop
	dc    *drainitConf // nil: drainit does not run the app
	// hostNet: the pod uses the node's network, where the kubelet's localhost is the pod's.
	hostNet bool
	app     *appTime // nil: unknown
	out     []Finding
}

func (k *containerCheck) add(line int, sev Severity, rule, format string, args ...any) {
	if line == 0 {
		line = k.c.Line
	}
	k.out = append(k.out, Finding{Line: line, Severity: sev, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func checkContainer(w *Workload, c *Container) []Finding {
	out, _ := checkContainerAfter(w, c, stopBefore{})
	return out
}

// checkContainerAfter applies the rules to one container, a native sidecar's stop coming after
// before's, and says when the container's stop may end, for the sidecars that wait for it.
func checkContainerAfter(w *Workload, c *Container, before stopBefore) ([]Finding, time.Duration) {
	env := newEnvMap(c)
	words := argv(c, env, false)
	k := &containerCheck{c: c, grace: w.Grace, hostNet: w.HostNetwork}
	k.dc = findDrainit(c, env)
	k.ps = analyzePreStop(c, env, k.dc)
	if k.ps.kind == hookDrainit && k.dc == nil {
		k.ps.kind = hookOther // `drainit prestop` to a drainit the manifest does not show
	}
	var springWarning *Finding
	k.app, springWarning = springShutdown(c, words, env)
	app := k.findApp(words, env) // other app servers' timeouts (apps.go)

	drainitOK := k.drainitConfig()
	k.noShell()
	k.controlServer()
	k.controlNoToken(w)
	k.adaptiveUDP()
	k.adaptiveMesh(w)
	k.adaptiveReady(w)
	k.autoHostNetwork()
	k.probes()
	k.probeGrace()
	k.stopSignal()
	k.forwardMasterWorker()
	if w.SharePID {
		k.signalsSandbox(env)
	}
	if w.Grace > 0 {
		// When the stop does not fit, its fix gives drainit's grace period as well: the
		// mismatch rule's window is the one that does not fit, and drainit would refuse it.
		fits := !k.preStopGrace() && !k.shutdownGrace(drainitOK)
		if fits && c.Sidecar && (k.dc == nil || drainitOK) {
			k.sidecarGrace(before)
		}
		if drainitOK && fits {
			k.drainitGrace()
		}
		if fits && (app == nil || !app.unbounded) {
			k.preStopMinimum(drainitOK)
		}
	}
	if springWarning != nil {
		k.out = append(k.out, *springWarning)
	}
	k.appRules(w, app)
	// A sidecar gets its stop signal once the main containers have stopped: its endpoint's
	// removal has long been under way.
	if k.dc == nil && k.ps.kind == hookNone && !c.Sidecar && w.Kind != "Job" && w.Kind != "CronJob" {
		k.add(c.Line, Info, RuleNoDrain, "no preStop hook and no drainit: the app gets SIGTERM at once, while its endpoint removal is still "+
			"reaching kube-proxy and the load balancers, so new connections can land on a stopping app; add a preStop sleep "+
			"(5-10s, within terminationGracePeriodSeconds %s) or run the app under drainit", fmtDur(w.Grace))
	}
	return k.out, k.stopEnd(before)
}

// controlNoToken: drainit's control server listens beyond loopback and needs no token, so any
// client that reaches the pod's port can stop the app (/prestop) and read /status: in a cluster,
// any pod, unless a NetworkPolicy keeps them out; with hostNetwork, anything that reaches the
// node. drainit warns at start too, deciding by the same config.ControlBeyondLoopback.
func (k *containerCheck) controlNoToken(w *Workload) {
	dc := k.dc
	if dc == nil || !dc.httpAddr.known || dc.httpAddr.src == "" || dc.token.src != "" {
		return
	}
	port, open := config.ControlBeyondLoopback(dc.httpAddr.raw)
	if !open {
		return
	}
	who := "any pod that reaches the pod's port %s (in every namespace, unless a NetworkPolicy keeps them out)"
	if w.HostNetwork {
		who = "anything that reaches the node's port %s (hostNetwork)"
	}
	k.add(dc.httpAddr.line, Warning, RuleControlNoToken, "drainit's control server (%s %q) needs no token and listens beyond loopback: "+
		who+" can stop the app with /prestop and read /status; set DRAINIT_HTTP_TOKEN from a Secret and send it from the preStop "+
		"httpGet (httpHeaders: [{name: Authorization, value: \"Bearer <token>\"}]), or, with an exec preStop (drainit prestop), "+
		"listen on 127.0.0.1:%s", dc.httpAddr.src, dc.httpAddr.raw, port, port)
}

// probeGrace: a liveness or startup probe with a terminationGracePeriodSeconds of its own has the
// kubelet restart the container with that grace period when it fails (KEP-2238), not the pod's,
// which drainit's --grace-period is set from and which drainit cannot tell apart. Where it is
// shorter than drainit's drain and kill margin, the runtime's SIGKILL comes before drainit's: the
// post-stop hooks and the summary are lost, and where it is no longer than the drain itself, the
// app gets no stop signal at all (a preStop to drainit excepted: drainit then sees the grace run
// out and stops the app 2 s before the SIGKILL).
func (k *containerCheck) probeGrace() {
	dc := k.dc
	if dc == nil || len(dc.errs) > 0 || !dc.grace.known || !dc.drain.known || !dc.margin.known {
		return
	}
	need := dc.budget.MinGrace
	for _, p := range k.c.Probes {
		if p.Grace == 0 || p.Kind == "readinessProbe" || p.Grace >= need || p.Grace >= dc.grace.d {
			continue
		}
		what := fmt.Sprintf("the app has %s from its stop signal, after the drain, to the runtime's SIGKILL, which comes before drainit's kill point: the post-stop hooks and the summary are lost", fmtDur(p.Grace-dc.drain.d))
		if p.Grace <= dc.drain.d {
			what = fmt.Sprintf("drainit's drain (%s) outlasts it and the runtime SIGKILLs the app before it has had its stop signal", fmtDur(dc.drain.d))
			if k.ps.kind == hookDrainit {
				what = fmt.Sprintf("drainit's drain (%s) outlasts it: the preStop call to drainit still waits when the kubelet's signal comes, so drainit stops the app then, and it has 1 s before the runtime's SIGKILL", fmtDur(dc.drain.d))
			}
		}
		k.add(p.GraceLine, Warning, RuleProbeGrace, "the %s sets terminationGracePeriodSeconds %s: when it fails, the kubelet restarts the container "+
			"with that grace period, not the pod's %s that drainit's grace period (%s) follows, and drainit cannot tell a probe's restart from a "+
			"deletion; %s; set it to at least %s (drainit's drain %s + kill margin %s), or leave it out",
			p.Kind, fmtDur(p.Grace), fmtDur(k.grace), fmtDur(dc.grace.d), what, fmtDur(need), fmtDur(dc.drain.d), fmtDur(dc.margin.d))
	}
}

// adaptiveMesh: in a pod of a service mesh, the sidecar (Envoy, linkerd-proxy) takes the pod's
// inbound traffic and passes each request to the app over connections it keeps open: counting
// new connections, the adaptive drain sees none while the mesh still routes to the pod and ends
// after its quiet period (bench/L7PROXY.md, on haproxy and nginx pools). Evidence
// of Istio as istio.go takes it; of Linkerd, the annotation linkerd.io/inject: enabled or a
// linkerd-proxy container. Injection enabled for the namespace is not in the manifest.
func (k *containerCheck) adaptiveMesh(w *Workload) {
	dc := k.dc
	if dc == nil || len(dc.errs) > 0 || !dc.adaptive {
		return
	}
	watch := dc.settings["drain-watch"]
	if !watch.known || strings.TrimSpace(watch.raw) != "connections" {
		return
	}
	mesh, line := "", 0
	if p := istioOf(w); p != nil {
		mesh, line = "Istio", p.drainLine
	} else if v := w.podMeta.linkerdInject; v.line != 0 && strings.EqualFold(strings.TrimSpace(v.value), "enabled") {
		mesh, line = "Linkerd", v.line
	} else {
		for i := range w.Containers {
			if w.Containers[i].Name == "linkerd-proxy" {
				mesh, line = "Linkerd", w.Containers[i].Line
			}
		}
	}
	if mesh == "" {
		return
	}
	k.add(dc.lineOf(watch), Warning, RuleAdaptiveMesh, "the drain is adaptive and counts new connections (--drain-watch %s), but the pod is in %s's mesh (line %d): "+
		"its sidecar keeps connections open to the app and passes each request over them, so no new connection need come while the mesh "+
		"still routes to the pod, and the drain ends after its quiet period with requests still on their way; set --drain-watch requests "+
		"(DRAINIT_DRAIN_WATCH=requests), which counts requests on open connections too", watch.raw, mesh, line)
}

// adaptiveReady: an adaptive drain ends once new connections stop, and while the pod is its
// Service's last ready one, kube-proxy sends them until the kubelet reports it not ready
// (docs/kubelet-stop-sequence.md). A readiness probe of drainit's /readyz does that from the first
// trigger; any other keeps the pod ready through the drain, which then runs to --drain-max with
// connections still coming (integration/node's TestClusterLastPodUntilNotReady, with the probe
// on /healthz). A probe of the app's port also opens connections of its own that the drain counts.
// Not for Jobs, CronJobs and native sidecars, which no Service routes to by their readiness alone.
func (k *containerCheck) adaptiveReady(w *Workload) {
	dc := k.dc
	if dc == nil || len(dc.errs) > 0 || !dc.adaptive || k.c.Sidecar || w.Kind == "Job" || w.Kind == "CronJob" {
		return
	}
	var probe *Probe
	for i := range k.c.Probes {
		if k.c.Probes[i].Kind == "readinessProbe" {
			probe = &k.c.Probes[i]
		}
	}
	port, probed := dc.port(), 0 // probed: the port an httpGet probe asks, 0 for none
	if probe != nil && probe.HTTP != nil {
		probed = resolvePort(probe.HTTP, k.c.Ports)
	}
	if port != 0 && probed == port && pathIs(probe.HTTP.Path, "/readyz") {
		return
	}
	fix := fmt.Sprintf("probe drainit's /readyz instead (readinessProbe: {httpGet: {path: /readyz, port: %d}}), which answers 503 "+
		"from the first trigger and, with DRAINIT_READY_PROBE set to the app's own check, follows the app's readiness before it", port)
	if port == 0 {
		fix = "turn on drainit's control server (DRAINIT_HTTP_ADDR=:8099) and probe its /readyz (readinessProbe: {httpGet: {path: /readyz, " +
			"port: 8099}}), which answers 503 from the first trigger"
	}
	what, line := "there is no readinessProbe, so the pod stays ready until its container exits", k.c.Line
	if probe != nil {
		what, line = "the readinessProbe does not ask drainit's /readyz, so the pod stays ready through the drain", probe.Line
		if probe.IsTCP || probe.HTTP != nil && probed != port {
			what += ", and its connections to the app count as new ones"
		}
	}
	k.add(line, Info, RuleAdaptiveReady, "the drain is adaptive, and %s: while the pod is its Service's last ready one (scaled to 0, "+
		"a single replica evicted), kube-proxy sends it new connections until it is not ready, and the drain runs to --drain-max with "+
		"connections still coming; %s", what, fix)
}

// autoHostNetwork: --drain-quiet auto takes the rate before the drain from the PassiveOpens
// counter of the pod's own network namespace; with hostNetwork the namespace is the node's, and
// the rate rests on the drain's own arrivals. A real kubelet calls the preStop 0.25-1.8 s after
// the DELETE, often after kube-proxy has stopped routing to the pod (integration/node README): the
// drain then sees no connection, cannot tell that from an idle pod, and waits for --drain-max.
func (k *containerCheck) autoHostNetwork() {
	dc := k.dc
	if dc == nil || len(dc.errs) > 0 || !dc.adaptive || !k.hostNet {
		return
	}
	q := dc.settings["drain-quiet"]
	if !q.known || !strings.EqualFold(strings.TrimSpace(q.raw), "auto") {
		return
	}
	k.add(dc.lineOf(q), Warning, RuleAutoHostNetwork, "--drain-quiet auto in a hostNetwork pod: the rate before the drain comes from the pod's own "+
		"network namespace, which it does not have, so the drain judges by the connections it sees itself; when the pod's endpoint is "+
		"removed before the kubelet's preStop (it often is: the kubelet runs the hook at a later pod sync), it sees none and waits for "+
		"--drain-max at every stop; set a fixed quiet period (--drain-quiet 1s)")
}

// pathIs says whether an httpGet path is want, a query string aside.
func pathIs(path, want string) bool {
	path, _, _ = strings.Cut(path, "?")
	return path == want
}

// adaptiveUDP: drainit's adaptive drain counts new TCP connections, and for an app that serves
// UDP it drains for --drain-delay instead (README, "Adaptive drain"): a declared UDP port says
// so before the first stop's log does. Not with --drain-ports, which names what to watch.
func (k *containerCheck) adaptiveUDP() {
	dc := k.dc
	if dc == nil || len(dc.errs) > 0 || !dc.adaptive || !dc.settings["drain-ports"].known || dc.settings["drain-ports"].raw != "" {
		return
	}
	var fixed, unseen []string // UDP ports drainit sees as served, and those it takes for a client's
	line, unseenLine := 0, 0
	for _, p := range k.c.Ports {
		if !strings.EqualFold(p.Protocol, "UDP") || p.Number <= 0 {
			continue
		}
		// drainit takes a socket on a port the kernel may pick itself (Linux's default
		// ip_local_port_range; the pod's own is not in the manifest) for a client's.
		if p.Number >= 32768 && p.Number <= 60999 {
			unseen = append(unseen, strconv.Itoa(p.Number))
			unseenLine = cmp.Or(unseenLine, p.Line)
			continue
		}
		fixed = append(fixed, strconv.Itoa(p.Number))
		line = cmp.Or(line, p.Line)
	}
	if len(unseen) > 0 && len(fixed) == 0 { // with a port drainit sees, the whole drain is fixed
		k.add(unseenLine, Warning, RuleAdaptiveUDP, "the drain is adaptive, but the container serves UDP on port %s, in the kernel's "+
			"ephemeral port range (32768-60999), where drainit takes a socket for a client's: the adaptive drain counts new TCP "+
			"connections only and can end while UDP still comes, which is then lost; use the fixed drain (--drain fixed, "+
			"--drain-delay covering the load balancers' time)", strings.Join(unseen, ", "))
	}
	if len(fixed) == 0 {
		return
	}
	delay := "--drain-delay"
	if dc.delay.known {
		delay += " (" + fmtDur(dc.delay.d) + ")"
	}
	k.add(line, Info, RuleAdaptiveUDP, "the drain is adaptive, but the container serves UDP (port %s): the adaptive drain counts new TCP "+
		"connections only, and drainit drains for %s instead, at every stop; make that cover the time the load balancers take "+
		"to stop sending it UDP, or, if the UDP port is not routed to the pod (a gossip port), name the TCP ports to watch in "+
		"--drain-ports", strings.Join(fixed, ", "), delay)
}

// drainitConfig reports what drainit refuses to start with (it exits 2 before starting the app,
// so the container crash-loops), in drainit's own words. It says whether drainit's timing can be
// checked further.
func (k *containerCheck) drainitConfig() bool {
	dc := k.dc
	if dc == nil {
		return false
	}
	for _, e := range dc.errs {
		k.add(e.line, Error, RuleDrainitConfig, "drainit will not start: %v", e.err)
	}
	for _, s := range dc.strays {
		k.add(s.line, Warning, RuleDrainitConfig, "%s", s.stray)
	}
	if dc.nested != "" {
		k.add(dc.line, Error, RuleDrainitConfig, "drainit runs %s as its app: the inner drainit will not start (two stop sequences would drain twice and outlive the grace period); keep one", dc.nested)
		return false
	}
	return len(dc.errs) == 0 && dc.grace.known && dc.drain.known && dc.margin.known
}

// httpMisses reports a preStop httpGet aimed at drainit's port that cannot start its drain: a
// path other than /prestop (drainit answers 404, or only reports for /healthz, /readyz and
// /status), a host that is the node's loopback (the kubelet sends the request from the node),
// or no host while drainit listens on loopback only (the kubelet sends it to the pod's IP).
func (k *containerCheck) httpMisses() bool {
	dc, g, line := k.dc, k.ps.http, k.c.PreStop.Line
	if g == nil || dc.port() == 0 {
		return false // `drainit prestop`, or an address the manifest does not show
	}
	const after = "the kubelet records FailedPreStopHook or nothing at all, and the drain starts only at SIGTERM"
	if !pathIs(g.Path, "/prestop") {
		k.add(line, Error, RulePreStopServer, "the preStop httpGet goes to drainit's control server with path %q, but only "+
			"/prestop starts the drain (drainit answers 404 to other paths, and /healthz, /readyz and /status only report): "+
			"%s; set path: /prestop", g.Path, after)
		return true
	}
	return k.unreachable(g, line, RulePreStopServer, "the preStop httpGet", after,
		", or use an exec preStop [\"/drainit\", \"prestop\"], which calls it from inside the container")
}

// unreachable reports an httpGet the kubelet sends to drainit's control server that cannot
// reach it: a host that is the node's loopback (the kubelet sends the request from the node), or
// no host while drainit listens on loopback only (the kubelet sends it to the pod's IP). what
// names the request, after says what follows, orElse is another fix for the second. With the
// node's network the node's loopback is the pod's, and neither is wrong. It says whether it
// reported.
func (k *containerCheck) unreachable(g *HTTPGet, line int, rule, what, after, orElse string) bool {
	if k.hostNet {
		return false
	}
	if isLoopbackHost(g.Host) {
		k.add(line, Error, rule, "%s has host %q, but the kubelet sends the request from the node, "+
			"where %s is the node's own loopback, not the pod's: the request fails or reaches something else, %s; remove host "+
			"(the kubelet then uses the pod's IP)", what, g.Host, g.Host, after)
		return true
	}
	dc := k.dc
	host, _, _ := splitPort(dc.httpAddr.raw)
	if g.Host == "" && isLoopbackHost(host) {
		k.add(line, Error, rule, "drainit's control server listens on loopback only (%s %q), but the kubelet sends "+
			"%s to the pod's IP: the connection is refused, %s; set %s to \":%d\"%s", dc.httpAddr.src, dc.httpAddr.raw,
			what, after, dc.httpAddr.src, dc.port(), orElse)
		return true
	}
	return false
}

// probeFailures is what follows, by probe kind, when a probe cannot reach drainit.
var probeFailures = map[string]string{
	"readinessProbe": "the probe fails, and the pod never becomes ready (it gets no traffic, and a rollout waits on it)",
	"livenessProbe":  "the probe fails, and the kubelet restarts the container every failureThreshold failures",
	"startupProbe": "the probe fails, and the kubelet restarts the container every failureThreshold failures " +
		"(its readiness and liveness probes never start)",
}

// probes reports a readiness, liveness or startup probe aimed at drainit's control server that
// the kubelet's request cannot reach. A probe of another port is the app's.
func (k *containerCheck) probes() {
	if k.dc == nil || k.dc.port() == 0 {
		return
	}
	for _, p := range k.c.Probes {
		if p.HTTP == nil || resolvePort(p.HTTP, k.c.Ports) != k.dc.port() {
			continue
		}
		k.unreachable(p.HTTP, p.Line, RuleProbeUnreachable, "the "+p.Kind+" httpGet", probeFailures[p.Kind], "")
	}
}

// isLoopbackHost says whether a host name or address is the loopback interface.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// noShell reports an exec preStop that needs a shell or sleep(1) in an image that has neither.
func (k *containerCheck) noShell() {
	if k.ps.shell == "" || !isShellless(k.c.Image) {
		return
	}
	fix := "call the program directly in exec.command, without a shell"
	if k.ps.kind == hookSleep && k.ps.min > 0 && k.ps.min < forever {
		secs := max(ceilSeconds(k.ps.min), 1)
		fix = fmt.Sprintf("use the native sleep action (preStop: {sleep: {seconds: %d}}, Kubernetes 1.30+) "+
			"or copy drainit into the image and run [\"/drainit\", \"sleep\", \"%ds\"]", secs, secs)
	}
	k.add(k.ps.line, Error, RuleNoShell, "the preStop hook runs %q but image %q has no shell and no sleep: the hook fails at once "+
		"(FailedPreStopHook) and the stop goes on with no delay; %s", k.ps.shell, k.c.Image, fix)
	// The hook does nothing: no delay to count.
	k.ps = preStop{kind: hookOther, line: k.ps.line, exact: true, desc: k.ps.desc}
}

// controlServer reports a preStop aimed at drainit's control server when the server is off, on
// another port, spoken to over TLS, or expects a token the hook does not send.
func (k *containerCheck) controlServer() {
	dc, h := k.dc, k.c.PreStop
	if dc == nil || h == nil {
		return
	}
	if k.ps.kind != hookDrainit {
		// An httpGet to /prestop on some other port while drainit listens elsewhere.
		if h.HTTP != nil && dc.port() != 0 {
			if port := resolvePort(h.HTTP, k.c.Ports); pathIs(h.HTTP.Path, "/prestop") && port != 0 && port != dc.port() {
				k.add(h.Line, Error, RulePreStopServer, "the preStop httpGet goes to port %d, but drainit's control server listens on %d (%s %q): "+
					"the request fails (FailedPreStopHook) and the drain starts only at SIGTERM", port, dc.port(), dc.httpAddr.src, dc.httpAddr.raw)
			}
		}
		return
	}
	if dc.httpAddr.known && dc.httpAddr.src == "" {
		what := "the preStop httpGet fails (connection refused)"
		if k.ps.http == nil {
			what = "`drainit prestop` cannot connect and exits non-zero"
		}
		k.add(h.Line, Error, RulePreStopServer, "the preStop hook asks drainit's control server to drain, but DRAINIT_HTTP_ADDR "+
			"(or --http-addr) is not set, so the server is off: %s, the kubelet records FailedPreStopHook and the drain starts only at SIGTERM; "+
			"set DRAINIT_HTTP_ADDR=:%d", what, exampleControlPort)
		return
	}
	if k.httpMisses() {
		// The hook fails or does nothing: no drain, and no delay, before the stop signal.
		k.ps = preStop{kind: hookOther, line: k.ps.line, exact: true, desc: k.ps.desc}
		return
	}
	if k.ps.http != nil && strings.EqualFold(k.ps.http.Scheme, "HTTPS") {
		// drainit answers the TLS ClientHello with a 400 in plain HTTP, which Go's client reports as
		// "server gave HTTP response to HTTPS client"; on that error the kubelet (lifecycle
		// handlers.go, runHTTPHandler) retries over HTTP, without the Authorization header, and
		// records a LifecycleHTTPFallback event. Seen on the v1.33 kubelet of integration/node: the
		// drain ran within the hook, and with a token the retry was refused.
		const https = "the preStop httpGet uses scheme HTTPS, but drainit's control server speaks plain HTTP: " +
			"the kubelet's TLS handshake gets a plain HTTP answer and the kubelet retries over HTTP"
		if dc.token.src != "" {
			k.add(h.Line, Error, RulePreStopServer, https+" without the Authorization header, which drainit refuses (401): "+
				"the drain starts only at SIGTERM; remove scheme: HTTPS")
			// The hook asks for nothing: no drain, and no delay, before the stop signal.
			k.ps = preStop{kind: hookOther, line: k.ps.line, exact: true, desc: k.ps.desc}
			return
		}
		k.add(h.Line, Warning, RulePreStopServer, https+", which drains, but it records a LifecycleHTTPFallback warning event "+
			"at every stop; remove scheme: HTTPS")
	}
	if k.ps.addr != "" && dc.port() != 0 {
		if _, p, err := splitPort(k.ps.addr); err == nil && p != dc.port() {
			k.add(h.Line, Error, RulePreStopServer, "`drainit prestop --addr %s` calls port %d, but drainit's control server listens on %d (%s %q): "+
				"the hook fails (FailedPreStopHook) and the drain starts only at SIGTERM", k.ps.addr, p, dc.port(), dc.httpAddr.src, dc.httpAddr.raw)
		}
	}
	if k.ps.http == nil || dc.token.src == "" {
		return
	}
	var auth *Header
	for i, hd := range k.ps.http.Headers {
		if strings.EqualFold(hd.Name, "Authorization") {
			auth = &k.ps.http.Headers[i]
		}
	}
	consequence := "drainit answers 401 at once and starts nothing, the kubelet ignores the status code and sends SIGTERM with no drain before it"
	switch {
	case auth == nil:
		k.add(h.Line, Error, RulePreStopToken, "%s is set but the preStop httpGet sends no Authorization header: %s; "+
			"add httpHeaders: [{name: Authorization, value: \"Bearer <token>\"}]", dc.token.src, consequence)
	case dc.token.known && !bearerIs(auth.Value, cleanToken(dc.token.raw)):
		k.add(h.Line, Error, RulePreStopToken, "the preStop httpGet's Authorization header is not \"Bearer \" followed by %s's value: %s",
			dc.token.src, consequence)
	}
}

// bearerIs says whether an Authorization header carries token as drainit's control server reads
// it (config.BearerToken: the scheme's name in any case, spaces after it).
func bearerIs(header, token string) bool {
	got, ok := config.BearerToken(strings.TrimSpace(header))
	return ok && got == token
}

// preStopGrace reports a preStop sleep longer than the grace period, or as long with more of
// the hook after it. It says whether it
// reported, so that the shutdown rule does not repeat it.
func (k *containerCheck) preStopGrace() bool {
	ps := k.ps
	if !k.sleepOutlastsGrace() {
		return false
	}
	need := ""
	if total, ok := k.needs(); ok && ps.min != forever {
		secs := ceilSeconds(total)
		need = fmt.Sprintf("; with %s it needs at least %ds%s", k.appParts(), secs,
			k.drainitGraceFix(time.Duration(secs)*time.Second, ", and", "to be"))
	}
	cmp := ">" // an exact sleep is reported only when longer
	if !ps.exact {
		cmp = "≥"
	}
	k.add(ps.line, Error, RulePreStopGrace, "%s %s terminationGracePeriodSeconds %s: the kubelet stops waiting for the hook at %s "+
		"and the app gets only the kubelet's %s minimum between SIGTERM and SIGKILL%s",
		ps.describe(), cmp, fmtDur(k.grace), fmtDur(k.grace), fmtDur(config.MinGraceAfterSignal), need)
	return true
}

// preStopMinimum reports a preStop sleep that ends within the kubelet's minimum of the grace
// period, where nothing tells how long the app takes to stop: the app gets that minimum, 2s,
// between SIGTERM and SIGKILL, as it would if the hook took the whole period. A known shutdown
// time is shutdownGrace's to judge, and an app that waits with no limit is unbounded's.
func (k *containerCheck) preStopMinimum(drainitOK bool) {
	ps := k.ps
	if ps.kind != hookSleep || k.c.Sidecar || k.app != nil || (k.dc != nil && !drainitOK) ||
		k.sleepOutlastsGrace() || k.grace-ps.min > config.MinGraceAfterSignal {
		return
	}
	window := k.afterPreStop(k.grace)
	gets := fmt.Sprintf("the app gets only the kubelet's %s minimum between SIGTERM and SIGKILL", fmtDur(window))
	if dc := k.dc; dc != nil {
		gets = fmt.Sprintf("the kubelet leaves only its %s minimum between SIGTERM and SIGKILL, %s of it for drainit's drain %s and kill margin %s",
			fmtDur(window), fmtDur(min(window, dc.budget.MinGrace)), fmtDur(dc.drain.d), fmtDur(dc.margin.d))
	}
	k.add(ps.line, Warning, RulePreStopMinimum, "%s of terminationGracePeriodSeconds %s: %s; nothing here says how long the app takes "+
		"to stop, and if longer it is SIGKILLed mid-shutdown: shorten the preStop sleep, or raise terminationGracePeriodSeconds "+
		"to the preStop plus the app's shutdown", ps.describe(), fmtDur(k.grace), gets)
}

// sleepOutlastsGrace says whether the preStop sleeps past the grace period: longer, or as long
// with more of the hook after it, which the kubelet cuts short. A sleep of exactly the whole
// period leaves the app what one just under it does, the kubelet's minimum (preStopMinimum's).
func (k *containerCheck) sleepOutlastsGrace() bool {
	ps := k.ps
	return ps.kind == hookSleep && (ps.min > k.grace || (ps.min == k.grace && !ps.exact))
}

// needs adds up what the stop takes after the kubelet starts it: the preStop, then drainit's
// drain (unless the preStop was the drain), the app's shutdown, and drainit's kill margin.
// ok is false when nothing beyond the preStop is known.
func (k *containerCheck) needs() (time.Duration, bool) {
	total := time.Duration(0)
	if k.ps.kind == hookSleep {
		total = k.ps.min
	}
	known := false
	if dc := k.dc; dc != nil {
		total = config.AddDur(total, dc.budget.MinGrace)
		known = true
	}
	if k.app != nil {
		total = config.AddDur(total, k.app.d)
		known = true
	}
	return total, known
}

// appParts names what comes after the preStop, for messages.
func (k *containerCheck) appParts() string {
	var parts []string
	if dc := k.dc; dc != nil {
		if k.ps.kind == hookDrainit {
			parts = append(parts, "drainit's drain "+fmtDur(dc.drain.d)+" (during the preStop)")
		} else {
			parts = append(parts, "drainit's drain "+fmtDur(dc.drain.d))
		}
	}
	if k.app != nil {
		parts = append(parts, fmt.Sprintf("app shutdown %s (%s)", fmtDur(k.app.d), k.app.src))
	}
	if dc := k.dc; dc != nil {
		parts = append(parts, "drainit's kill margin "+fmtDur(dc.margin.d))
	}
	return strings.Join(parts, " + ")
}

// shutdownGrace reports a stop that cannot fit in the grace period: the preStop plus the app's
// known shutdown time (and drainit's drain and kill margin when drainit runs the app). It says
// whether it reported.
func (k *containerCheck) shutdownGrace(drainitOK bool) bool {
	if k.dc != nil && !drainitOK {
		return false // drainit will not start at all; that is the finding
	}
	total, ok := k.needs()
	if !ok {
		return false
	}
	grace, ps, dc := k.grace, k.ps, k.dc
	// What the kubelet leaves after the preStop, and what has to fit in it.
	window, after := k.afterPreStop(grace), total-k.preStopSleep()
	// With drainit and no known app time (or a known 0), the app still needs some time, and
	// drainit's grace period must exceed its drain and kill margin: equal is too little.
	if after < window || (after == window && (dc == nil || k.appTime() > 0)) {
		return false
	}
	var sum string
	if ps.kind == hookSleep {
		sum = ps.describe() + " + " + k.appParts()
	} else {
		sum = k.appParts()
	}
	// Point at the preStop, which eats the time, or else at where the app's time is set.
	line := k.c.Line
	if ps.line != 0 {
		line = ps.line
	} else if k.app != nil {
		line = k.app.line
	}
	var why string
	switch {
	case dc == nil && ps.kind == hookSleep:
		why = fmt.Sprintf("after the preStop the app gets max(%s - %s, %s) = %s before SIGKILL, less than its %s shutdown",
			fmtDur(grace), fmtDur(ps.min), fmtDur(config.MinGraceAfterSignal), fmtDur(window), fmtDur(k.app.d))
	case dc == nil:
		why = fmt.Sprintf("the app gets at most %s between SIGTERM and SIGKILL, less than its %s shutdown", fmtDur(grace), fmtDur(k.app.d))
	default:
		left := window - (after - k.appTime())
		if left <= 0 || k.app == nil {
			why = "drainit has to SIGKILL the app before it gets any time to stop"
		} else {
			why = fmt.Sprintf("the app gets %s between its stop signal and drainit's SIGKILL, less than its %s shutdown", fmtDur(left), fmtDur(k.app.d))
		}
	}
	need := ceilSeconds(total)
	if dc != nil && k.app == nil {
		also := " (and drainit's grace period with it)"
		if ps.kind == hookSleep {
			also = fmt.Sprintf(" (and drainit's grace period to that less the preStop's %s: drainit's clock starts at SIGTERM)", fmtDur(ps.min))
		}
		k.add(line, Error, RuleShutdownGrace, "grace %s, %s = %s → needs more than %s plus the app's own shutdown: %s; "+
			"raise terminationGracePeriodSeconds%s or shorten the drain",
			fmtDur(grace), sum, fmtDur(total), fmtDur(total), why, also)
		return true
	}
	also := ""
	if dc != nil {
		also = k.drainitGraceFix(time.Duration(need)*time.Second, " and", "to")
	}
	k.add(line, Error, RuleShutdownGrace, "grace %s, %s → needs %ds: %s, so it is SIGKILLed mid-shutdown; "+
		"set terminationGracePeriodSeconds to at least %d%s", fmtDur(grace), sum, need, why, need, also)
	return true
}

// drainitGraceFix is the clause of a fix that raises the pod's grace period to podGrace which
// gives drainit's grace period: the time from drainit's trigger to the kubelet's SIGKILL then,
// as the mismatch rule reckons it (drainitGrace), lest the user set both to the same value and
// drainit's outlast the kubelet's. lead comes first (" and"), verb between the option and the
// value ("to", "to be"). It is empty when drainit's is right already.
func (k *containerCheck) drainitGraceFix(podGrace time.Duration, lead, verb string) string {
	dc, ps := k.dc, k.ps
	if dc == nil {
		return ""
	}
	window, atMost, why := podGrace, "", ""
	switch {
	case k.c.Sidecar && ps.kind != hookDrainit, ps.kind == hookOther:
		// Its trigger comes after a wait the manifest does not fix: at most the pod's.
		return " (and drainit's grace period with it, less what comes before drainit's trigger)"
	case ps.kind == hookSleep:
		window = k.afterPreStop(podGrace)
		why = fmt.Sprintf(", the pod's grace period less the preStop's %s (drainit's clock starts at SIGTERM)", fmtDur(ps.min))
		if !ps.exact {
			atMost = "at most "
		}
	}
	if dc.grace.known && dc.grace.d == window {
		return ""
	}
	return fmt.Sprintf("%s %s %s %s%s%s", lead, k.graceOption(), verb, atMost, fmtDur(window), why)
}

// graceOption names where drainit's grace period is set, or where to set it.
func (k *containerCheck) graceOption() string {
	if k.dc.grace.src == "" {
		return "DRAINIT_GRACE_PERIOD"
	}
	return k.dc.grace.src
}

// stopEnd is when the container's stop may end, counted from the start of the pod's stop: its
// preStop sleep, or for a sidecar the later of that and before, then drainit's drain, the app's
// known shutdown and drainit's kill margin; at most the grace period, where the kubelet's
// SIGKILL ends it, and where a sidecar waiting for it stops waiting (waitForTurn). A drainit
// preStop's drain runs during the hook, whose length is not known.
func (k *containerCheck) stopEnd(before stopBefore) time.Duration {
	if k.grace <= 0 {
		return 0
	}
	total, _ := k.needs()
	if k.c.Sidecar && k.ps.kind != hookDrainit {
		total = config.AddDur(max(k.preStopSleep(), before.d), total-k.preStopSleep())
	}
	return min(total, k.grace)
}

// afterPreStop is what the kubelet leaves between SIGTERM and SIGKILL when the pod's grace period
// is grace: all of it, or after a preStop sleep what is left, at least the kubelet's minimum.
func (k *containerCheck) afterPreStop(grace time.Duration) time.Duration {
	if k.ps.kind == hookSleep {
		return max(grace-k.ps.min, config.MinGraceAfterSignal)
	}
	return grace
}

// preStopSleep is how long the preStop keeps the kubelet waiting, at least: 0 unless it sleeps.
func (k *containerCheck) preStopSleep() time.Duration {
	if k.ps.kind == hookSleep {
		return k.ps.min
	}
	return 0
}

// sidecarGrace reports a native sidecar whose stop does not fit in what the kubelet leaves it
// after the containers it waits for: the kubelet runs its preStop when the pod's stop starts,
// beside the main containers', but sends its stop signal only once they (and the sidecars
// declared after it) have stopped, all within the one grace period
// (kuberuntime_termination_order.go, killContainer).
func (k *containerCheck) sidecarGrace(before stopBefore) {
	pre := k.preStopSleep()
	total, ok := k.needs()
	if !ok || k.ps.kind == hookDrainit || before.who == nil || before.d <= pre {
		return // nothing known after the signal, or its own preStop outlasts the others: shutdownGrace's case
	}
	own := total - pre
	// killContainer takes the hook's time and then the wait for its turn off the grace period,
	// each rounded down to whole seconds, and leaves at least 2s. Together they are at most the
	// time until its turn rounded down, however long the hook itself takes to run.
	turn := before.d.Truncate(time.Second)
	left := max(k.grace-turn, config.MinGraceAfterSignal)
	if own <= left {
		return
	}
	who := fmt.Sprintf("container %q", before.who.Name)
	if before.who.Sidecar {
		who = fmt.Sprintf("sidecar %q", before.who.Name)
	}
	line := k.c.Line
	if k.app != nil {
		line = k.app.line
	}
	parts := k.appParts()
	if strings.Contains(parts, " + ") {
		parts += " = " + fmtDur(own)
	}
	need := int64(turn/time.Second) + ceilSeconds(own)
	k.add(line, Error, RuleSidecarGrace, "native sidecar (an init container with restartPolicy: Always): the kubelet sends it its stop "+
		"signal only once the containers before it have stopped, and %s may take %s; it takes that time, in whole seconds rounded down, "+
		"off grace %s and leaves the sidecar max(%s - %s, %s) = %s before SIGKILL, and its own stop takes %s, so it is SIGKILLed mid-shutdown; "+
		"set terminationGracePeriodSeconds to at least %d, or shorten %s's stop",
		who, fmtDur(before.d), fmtDur(k.grace), fmtDur(k.grace), fmtDur(turn), fmtDur(config.MinGraceAfterSignal), fmtDur(left), parts,
		need, who)
}

func (k *containerCheck) appTime() time.Duration {
	if k.app == nil {
		return 0
	}
	return k.app.d
}

// drainitGrace compares drainit's grace period with the time the kubelet actually leaves it:
// from drainit's trigger to the kubelet's SIGKILL.
func (k *containerCheck) drainitGrace() {
	dc, ps, grace := k.dc, k.ps, k.grace
	if !dc.grace.known {
		return
	}
	window, exact := grace, true
	var because string
	switch ps.kind {
	case hookNone:
		because = fmt.Sprintf("the kubelet sends SIGKILL %s after SIGTERM (terminationGracePeriodSeconds)", fmtDur(grace))
	case hookDrainit:
		because = fmt.Sprintf("the kubelet sends SIGKILL %s after it calls the preStop, drainit's trigger (terminationGracePeriodSeconds)", fmtDur(grace))
	case hookSleep:
		window = k.afterPreStop(grace)
		exact = ps.exact
		because = fmt.Sprintf("drainit's clock starts at SIGTERM, after %s, and the kubelet sends SIGKILL max(%s - %s, %s) = %s later",
			ps.describe(), fmtDur(grace), fmtDur(min(ps.min, grace)), fmtDur(config.MinGraceAfterSignal), fmtDur(window))
	case hookOther:
		exact = false
		because = fmt.Sprintf("the kubelet sends SIGKILL at most %s after SIGTERM, less whatever the preStop hook takes", fmtDur(grace))
	}
	if k.c.Sidecar && ps.kind != hookDrainit {
		// Its stop signal waits for the other containers, whose stop the manifest bounds but
		// does not fix: the window is at most this, and a shorter grace period may be right.
		exact = false
		because = fmt.Sprintf("as a native sidecar it gets SIGTERM only once the main containers have stopped, and the kubelet's "+
			"SIGKILL comes at most %s after that (terminationGracePeriodSeconds, less its preStop)", fmtDur(window))
	}
	g := dc.grace.d
	what := fmt.Sprintf("drainit's grace period is %s (%s=%s)", fmtDur(g), dc.grace.src, dc.grace.raw)
	set := "set " + k.graceOption()
	switch {
	case dc.grace.src == "":
		what = fmt.Sprintf("drainit's grace period is its default %s (DRAINIT_GRACE_PERIOD is not set)", fmtDur(g))
	case dc.grace.empty:
		what = fmt.Sprintf("drainit's grace period is its default %s (%s is empty, which drainit takes as unset)", fmtDur(g), dc.grace.src)
	}
	line := dc.lineOf(dc.grace.setting)
	switch {
	case g > window:
		k.add(line, Error, RuleDrainitGrace, "%s, but %s: the kubelet's SIGKILL comes first, so drainit's kill margin, "+
			"post-stop hooks and exit summary are lost; %s to %s", what, because, set, fmtDur(window))
	case g < window && exact:
		// drainit's own budget after its trigger: the drain unless the preStop did it, the
		// app's shutdown, the kill margin.
		need := config.AddDur(dc.margin.d, k.appTime())
		if ps.kind != hookDrainit {
			need = config.AddDur(need, dc.drain.d)
		}
		killAt := dc.budget.KillAt
		if k.app != nil && need > g {
			k.add(line, Error, RuleDrainitGrace, "%s, but %s: drainit SIGKILLs the app at %s - %s = %s, mid-way through its %s shutdown (%s), "+
				"though the kubelet would wait; %s to %s", what, because, fmtDur(g), fmtDur(dc.margin.d), fmtDur(killAt),
				fmtDur(k.app.d), k.app.src, set, fmtDur(window))
			return
		}
		k.add(line, Warning, RuleDrainitGrace, "%s, but %s: drainit SIGKILLs the app at %s - %s = %s where it could wait until %s; %s to %s",
			what, because, fmtDur(g), fmtDur(dc.margin.d), fmtDur(killAt), fmtDur(window-dc.margin.d), set, fmtDur(window))
	}
}

// describe names the preStop and its duration for messages: "preStop 10s (sleep action)",
// "preStop at least 5s ("sh -c sleep 5 && nginx -s quit")".
func (ps preStop) describe() string {
	switch {
	case ps.min == forever:
		return "preStop forever (" + ps.desc + ")"
	case ps.exact:
		return "preStop " + fmtDur(ps.min) + " (" + ps.desc + ")"
	}
	return "preStop at least " + fmtDur(ps.min) + " (" + ps.desc + ")"
}

// isShellless says whether an image is known to have no shell and no coreutils: distroless
// (except its :debug tags, which carry busybox) or Chainguard's static. An image built FROM
// scratch has a name of its own, which tells nothing ("scratchpad-api").
func isShellless(image string) bool {
	name, tag := imageName(image)
	if strings.Contains(tag, "debug") {
		return false
	}
	switch {
	case strings.HasPrefix(name, "gcr.io/distroless/"), strings.Contains(name, "/distroless/"):
		return true
	case name == "cgr.dev/chainguard/static":
		return true
	}
	return false
}

// imageName splits an image reference, lowercased, into its repository and its tag ("" when it
// has none); a digest is dropped.
func imageName(image string) (repo, tag string) {
	ref := strings.ToLower(image)
	if at := strings.IndexByte(ref, '@'); at >= 0 {
		ref = ref[:at]
	}
	if colon := strings.LastIndexByte(ref, ':'); colon > strings.LastIndexByte(ref, '/') {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

// fmtDur writes a duration the way pod specs think: whole seconds as "30s", anything else in Go
// syntax, and forever as "forever".
func fmtDur(d time.Duration) string {
	switch {
	case d == forever:
		return "forever"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// ceilSeconds is d rounded up to whole seconds, what terminationGracePeriodSeconds can say.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// cleanToken is the token as drainit uses it (whitespace around it trimmed; a bad one is a
// drainit-config finding already, and compared as written).
func cleanToken(raw string) string {
	if t, _, err := config.CleanToken(raw); err == nil {
		return t
	}
	return raw
}
