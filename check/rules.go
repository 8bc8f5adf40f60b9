package check

import (
	"fmt"
	"strings"
)

// RuleInfo is what a rule is, for the people reading its findings and for the tools that show
// them (SARIF's rule metadata, `drainit check --help`, the README's table of rules).
type RuleInfo struct {
	ID       string
	Severity Severity // the worst a finding of the rule can be; Mixed says when it can be less
	Mixed    string   // when the rule reports a lesser severity; "" when it never does
	Short    string   // one line: what goes wrong
	Catches  string   // what the rule looks at and why it matters
	Fix      string   // what to change
}

// registry holds every rule, in the order the README lists them. TestRegistryCoversEveryRule
// parses the package and fails when a Rule* constant has no entry here, so a rule cannot ship
// without its metadata.
var registry = []RuleInfo{
	{
		ID: RuleGraceZero, Severity: Error,
		Short:   "terminationGracePeriodSeconds is 0",
		Catches: "A grace period of 0 makes every delete a force delete: the API server forgets the pod at once while its containers still run (a StatefulSet may start the replacement, same identity, beside it), the preStop hook gets at most 1s and the app 2s before SIGKILL.",
		Fix:     "Set terminationGracePeriodSeconds to the seconds the app needs to stop (the default is 30).",
	},
	{
		ID: RuleGraceNegative, Severity: Error,
		Short:   "terminationGracePeriodSeconds is negative",
		Catches: "A negative grace period is stored by the API server with a warning, and every delete of the pod then uses a grace period of 1s: the preStop hook gets at most 1s and the app 2s before SIGKILL.",
		Fix:     "Set terminationGracePeriodSeconds to the seconds the app needs to stop (the default is 30).",
	},
	{
		ID: RulePreStopGrace, Severity: Error,
		Short:   "the preStop hook alone outlasts the grace period",
		Catches: "A preStop sleep (the sleep action, an exec sleep, sh -c 'sleep N', drainit sleep) longer than terminationGracePeriodSeconds, or as long with more of the hook after it: the kubelet stops waiting for the hook when the grace period ends, so the sleep is cut short, and the app gets only the kubelet's 2s minimum between SIGTERM and SIGKILL. The API server refuses such a sleep action.",
		Fix:     "Shorten the preStop sleep, or raise terminationGracePeriodSeconds to the preStop plus the app's shutdown.",
	},
	{
		ID: RulePreStopMinimum, Severity: Warning,
		Short:   "a preStop sleep leaves the app only the kubelet's 2s minimum",
		Catches: "A preStop sleep that ends with terminationGracePeriodSeconds or 2s or less before it, where the manifest does not say how long the app takes to stop: the kubelet gives the app at least 2s between SIGTERM and SIGKILL, and here no more, as if the hook took the whole grace period. Not reported where the app's shutdown time is known (shutdown-exceeds-grace judges it) or it waits with no limit (shutdown-unbounded).",
		Fix:     "Shorten the preStop sleep, or raise terminationGracePeriodSeconds to the preStop plus the app's shutdown.",
	},
	{
		ID: RuleShutdownGrace, Severity: Error,
		Short:   "preStop plus the app's shutdown do not fit in the grace period",
		Catches: "The preStop hook, then the app's known shutdown time (its framework's shutdown timeout as the container sets it, or the framework's documented default; drainit's drain delay and kill margin when drainit runs the app) add up to more than terminationGracePeriodSeconds: the app is SIGKILLed mid-shutdown.",
		Fix:     "Raise terminationGracePeriodSeconds to the sum the message gives, and drainit's --grace-period to the value it gives (the pod's less a preStop sleep: drainit's clock starts at SIGTERM), or shorten the preStop or the drain.",
	},
	{
		ID: RuleSidecarGrace, Severity: Error,
		Short:   "a native sidecar's stop does not fit after the main containers'",
		Catches: "A native sidecar (an init container with restartPolicy: Always) gets its stop signal only once the main containers, and the sidecars declared after it, have stopped, within the same terminationGracePeriodSeconds: the kubelet takes the time they may take (preStop, drainit's drain, the app's known shutdown), in whole seconds rounded down, off the grace period and leaves the sidecar the rest, at least 2s, which is less than the sidecar's own drain and shutdown: it is SIGKILLed mid-shutdown.",
		Fix:     "Raise terminationGracePeriodSeconds to the value the message gives, or shorten the main containers' stop or the sidecar's.",
	},
	{
		ID: RuleDrainitConfig, Severity: Error,
		Mixed:   "a warning for a DRAINIT_* variable drainit does not know: it starts, and ignores it",
		Short:   "drainit refuses its configuration",
		Catches: "drainit's flags and DRAINIT_* variables in the manifest, read by drainit's own parser: a configuration drainit refuses at start makes it exit 2 before the app starts, and the container crash-loops. So does a drainit whose app is drainit again (README: drainit under drainit). Values from Secrets, ConfigMaps or envFrom are not checked.",
		Fix:     "Correct the setting the message quotes; the message is drainit's own. A variable drainit does not know: the message names the option it most likely misspells. Nested: keep one drainit.",
	},
	{
		ID: RuleDrainitGrace, Severity: Error,
		Mixed:   "a warning when drainit's grace period is only shorter than it could be",
		Short:   "drainit's grace period is not the time the kubelet leaves it",
		Catches: "drainit's --grace-period against the time from drainit's trigger to the kubelet's SIGKILL (terminationGracePeriodSeconds, less a preStop sleep). Longer: the kubelet's SIGKILL comes first, and drainit's kill margin, post-stop hooks and exit summary are lost. Shorter: drainit SIGKILLs the app earlier than it must (an error when the app's known shutdown then does not fit).",
		Fix:     "Set DRAINIT_GRACE_PERIOD (or --grace-period) to the window the message gives.",
	},
	{
		ID: RulePreStopServer, Severity: Error,
		Mixed:   "a warning for HTTPS with no token: the kubelet's retry over plain HTTP drains",
		Short:   "the preStop hook calls a control server that is off or elsewhere",
		Catches: "A preStop httpGet to /prestop, or `drainit prestop`, while drainit's control server is off (DRAINIT_HTTP_ADDR unset), listens on another port or on loopback only (the kubelet calls the pod's IP), or is called over HTTPS, with a host of localhost (the node's loopback, not the pod's), or on a path other than /prestop: the hook fails (FailedPreStopHook) or does nothing, and the drain starts only at SIGTERM. Over HTTPS the kubelet retries over plain HTTP, with a warning event at every stop and without the Authorization header, which a token then refuses.",
		Fix:     "Set DRAINIT_HTTP_ADDR (for example :8099) and aim the hook at that port over plain HTTP, path /prestop, with no host.",
	},
	{
		ID: RulePreStopToken, Severity: Error,
		Short:   "the preStop httpGet lacks the control server's token",
		Catches: "drainit's control server requires a token (DRAINIT_HTTP_TOKEN or --http-token) but the preStop httpGet sends no Authorization header, or another token: drainit answers 401 and starts nothing, and the kubelet, which ignores the status, sends SIGTERM with no drain before it.",
		Fix:     "Add an Authorization header to the httpGet's httpHeaders, \"Bearer \" followed by the token drainit expects.",
	},
	{
		ID: RuleControlNoToken, Severity: Warning,
		Short:   "drainit's control server needs no token and listens beyond loopback",
		Catches: "DRAINIT_HTTP_ADDR (or --http-addr) on every address or a non-loopback one, with no DRAINIT_HTTP_TOKEN (or --http-token): any client that reaches the pod's port, any pod of the cluster unless a NetworkPolicy keeps it out (with hostNetwork, anything that reaches the node), can stop the app with /prestop and read /status. drainit warns at start too.",
		Fix:     "Set DRAINIT_HTTP_TOKEN from a Secret and send it from the preStop httpGet as an Authorization header, \"Bearer \" followed by the token; with an exec preStop (drainit prestop), listen on 127.0.0.1 instead.",
	},
	{
		ID: RuleProbeUnreachable, Severity: Error,
		Short:   "a probe of drainit's control server that the kubelet cannot reach",
		Catches: "A readinessProbe, livenessProbe or startupProbe httpGet to drainit's control port (by number, or by a name among the container's ports) with a host of localhost or another loopback address (the kubelet sends probes from the node, where that is the node's loopback, not the pod's), or with no host while drainit listens on loopback only (the kubelet calls the pod's IP): the probe fails, so the pod never becomes ready, or the kubelet restarts the container again and again. Not reported with hostNetwork: true, where the node's loopback is the pod's.",
		Fix:     "Remove the probe's host, and let drainit's control server listen on the pod's IP: DRAINIT_HTTP_ADDR=:8099.",
	},
	{
		ID: RuleNoShell, Severity: Error,
		Short:   "an exec preStop needs a shell or sleep the image does not have",
		Catches: "An exec preStop hook that runs sh, bash or sleep in an image known to have neither (distroless without :debug, Chainguard static): the hook fails at once (FailedPreStopHook) and the stop goes on with no delay.",
		Fix:     "Use the native sleep action (preStop: {sleep: {seconds: N}}, Kubernetes 1.30+), or copy drainit into the image and run [\"/drainit\", \"sleep\", \"10s\"], or call the program directly without a shell.",
	},
	{
		ID: RuleSignalsSandbox, Severity: Error,
		Mixed:   "a warning for any other signal than SIGTERM and SIGINT: the pause has no handler for it, and the signal reaches nobody",
		Short:   "a preStop signals PID 1, which with shareProcessNamespace is the pod's sandbox",
		Catches: "An exec preStop hook that runs kill on PID 1 (kill -TERM 1, sh -c 'sleep 10 && kill 1') in a pod with shareProcessNamespace: true, whose containers share one PID namespace with the sandbox's pause as PID 1: the signal goes to the pause, not to the container's first process. The pause exits on SIGTERM and SIGINT, and the kernel then SIGKILLs every container of the pod at once: no drain, no graceful stop.",
		Fix:     "Drop the kill: the kubelet sends the container its stop signal after the hook (with drainit, that signal starts the drain; [\"/drainit\", \"prestop\"] drains within the hook). Or signal the app by its own pid, or drop shareProcessNamespace.",
	},
	{
		ID: RuleAdaptiveUDP, Severity: Info,
		Mixed:   "a warning for a UDP port in Linux's ephemeral range, 32768-60999, where drainit takes a socket for a client's: its traffic goes unseen, and the adaptive drain can end while it still comes",
		Short:   "an adaptive drain in a container that serves UDP drains for --drain-delay",
		Catches: "drainit with --drain adaptive in a container that declares a UDP port (ports[].protocol: UDP): the adaptive drain counts new TCP connections only, and Linux counts no socket's datagrams, so for an app that serves UDP drainit drains for --drain-delay instead, at every stop (README: Adaptive drain). Not reported with --drain-ports, which names the ports to watch.",
		Fix:     "Set --drain-delay (DRAINIT_DRAIN_DELAY) to cover the time the load balancers take to stop sending the pod UDP; if the UDP port is not routed to the pod (a gossip port), name the TCP ports to watch in --drain-ports.",
	},
	{
		ID: RuleProbeGrace, Severity: Warning,
		Short:   "a liveness or startup probe's grace period shorter than drainit's stop",
		Catches: "A livenessProbe or startupProbe with its own terminationGracePeriodSeconds, shorter than drainit's drain and kill margin: when the probe fails, the kubelet restarts the container with that grace period, not the pod's that drainit's --grace-period follows, and drainit cannot tell the restart from a deletion. The runtime's SIGKILL then comes before drainit's: the post-stop hooks and the summary are lost, and where the grace period is no longer than the drain, the app gets no stop signal at all (with a preStop to drainit, drainit stops it 2 s before the SIGKILL).",
		Fix:     "Raise the probe's terminationGracePeriodSeconds to at least the drain plus the kill margin (the message gives the number), or leave it out so that the pod's applies.",
	},
	{
		ID: RuleAdaptiveMesh, Severity: Warning,
		Short:   "an adaptive drain that counts new connections in a service mesh's pod",
		Catches: "drainit with --drain adaptive and --drain-watch connections (the default) in a pod with an Istio or Linkerd sidecar (sidecar.istio.io/inject or linkerd.io/inject enabled, proxy.istio.io/config, or an istio-proxy or linkerd-proxy container): the sidecar passes each request to the app over connections it keeps open, so no new connection need come while the mesh still routes to the pod, and the drain ends after its quiet period with requests still on their way (README: Adaptive drain, behind a proxy that pools its connections). Injection enabled for the whole namespace is not in the manifest.",
		Fix:     "Set --drain-watch requests (DRAINIT_DRAIN_WATCH=requests): the drain then counts requests on open connections too, and ends once the mesh has stopped routing to the pod.",
	},
	{
		ID: RuleAdaptiveReady, Severity: Info,
		Short:   "an adaptive drain in a pod whose readiness probe is not drainit's /readyz",
		Catches: "drainit with --drain adaptive in a container (not a Job's, a CronJob's or a native sidecar) with no readinessProbe, or one that does not ask drainit's /readyz: the pod stays ready through the drain. While it is its Service's last ready pod (a Deployment scaled to 0, a single replica evicted), kube-proxy routes to terminating pods that are still ready, so new connections keep coming, and the drain, which waits for them to stop, runs to --drain-max; those that come after the app has stopped fail. A probe of the app's port also opens connections the drain counts. Seen on a real kubelet and kube-proxy, with the probe on /healthz (integration/node's README).",
		Fix:     "Point the readinessProbe at drainit's /readyz (httpGet, path /readyz, drainit's control port, DRAINIT_HTTP_ADDR=:8099), which answers 503 from the first trigger; set DRAINIT_READY_PROBE to the app's own readiness check for /readyz to follow it before the stop.",
	},
	{
		ID: RuleAutoHostNetwork, Severity: Warning,
		Short:   "--drain-quiet auto in a hostNetwork pod",
		Catches: "drainit with --drain adaptive and --drain-quiet auto in a pod with hostNetwork: true. auto takes the rate before the drain from the PassiveOpens counter of the pod's own network namespace; on the node's it cannot, and the drain judges by the connections it sees itself. A real kubelet runs the preStop 0.25-1.8 s after the DELETE (its pod worker waits for the next PLEG relist, once a second), often after kube-proxy has stopped routing to the pod: the drain then sees no connection, cannot tell that from an idle pod, and waits for --drain-max at every stop (seen on a real kubelet and kube-proxy: integration/node's README).",
		Fix:     "Set a fixed quiet period (--drain-quiet 1s, DRAINIT_DRAIN_QUIET=1s).",
	},
	{
		ID: RuleNoDrain, Severity: Info,
		Short:   "nothing delays the stop for endpoint removal",
		Catches: "A container with no preStop hook that does not run under drainit (Jobs and CronJobs excepted): SIGTERM arrives while the endpoint's removal is still reaching kube-proxy and the load balancers, so new connections can land on a stopping app.",
		Fix:     "Add a preStop sleep of 5-10s within terminationGracePeriodSeconds, or run the app under drainit.",
	},
	{
		ID: RuleSpringDuration, Severity: Warning,
		Short:   "a Spring Boot shutdown timeout that is probably not what was meant",
		Catches: "spring.lifecycle.timeout-per-shutdown-phase (in the environment, the arguments or JAVA_TOOL_OPTIONS) written as a bare number, which Spring Boot reads as milliseconds, or with a unit Spring Boot does not know, in which case the shutdown time goes unchecked.",
		Fix:     "Write the duration with its unit: 20s, 1m.",
	},
	{
		ID: RuleStopSignalNotTrigger, Severity: Error,
		Mixed:   "a warning when a preStop hook has drained or waited before the signal",
		Short:   "the container's stop signal is not one of drainit's triggers",
		Catches: "lifecycle.stopSignal names a signal that is not one of drainit's triggers (--triggers, plus --stop-signal): the platform stops the container with it, drainit forwards it to the app at once, and the app stops with no drain while /readyz still answers 200.",
		Fix:     "Set drainit's --stop-signal to that signal (DRAINIT_STOP_SIGNAL), or add it to --triggers.",
	},
	{
		ID: RuleStopSignalImage, Severity: Warning,
		Short:   "an nginx, php-fpm, httpd or haproxy image whose stop signal is not a trigger",
		Catches: "An image that looks, by its name, like nginx or php-fpm (STOPSIGNAL SIGQUIT), Apache httpd or php's apache variant (SIGWINCH) or haproxy (SIGUSR1), run under drainit without that signal as --stop-signal: images built FROM them inherit it, so the runtime stops the container with it and drainit forwards it at once, with no drain. Formerly stop-signal-image-quit (nginx and php-fpm only), an id --ignore and drainit.io/ignore still take.",
		Fix:     "Set --stop-signal to the image's signal (DRAINIT_STOP_SIGNAL=QUIT, WINCH or USR1) and --forward child (each of these servers' masters passes its stop on to its workers): it then starts the drain and is what the app gets after it, its graceful stop.",
	},
	{
		ID: RuleForwardMasterWorker, Severity: Warning,
		Short:   "haproxy under drainit's --forward group: its workers get each signal twice",
		Catches: "An image that looks, by its name, like haproxy, whose stop signal (SIGUSR1) drainit takes as a trigger, run with --forward group (the default): haproxy -W, as its image's entry point runs it, has its master pass every signal on to its workers, and drainit signals the whole group, so each worker gets the stop signal twice; about one stop in a hundred a worker then exits 138 or 139 instead of finishing its requests (tested on Debian's haproxy 2.6).",
		Fix:     "Set --forward child (DRAINIT_FORWARD=child): drainit signals haproxy's master alone, which passes the signal on.",
	},
	{
		ID: RuleStopSignalInvalid, Severity: Error,
		Short:   "a lifecycle.stopSignal the API server rejects",
		Catches: "lifecycle.stopSignal (Kubernetes 1.33+) must be an upper-case signal name with the SIG prefix (SIGTERM, SIGRTMIN+1): anything else makes the API server reject the pod where ContainerStopSignals is on.",
		Fix:     "Write the signal the way the message suggests, like SIGQUIT.",
	},
	{
		ID: RuleShutdownUnbounded, Severity: Info,
		Short:   "the app waits for its open connections with no limit",
		Catches: "uvicorn without --timeout-graceful-shutdown (no default), or nginx whose main configuration is in the manifest (-g, or a ConfigMap of the same input mounted as nginx.conf) without worker_shutdown_timeout, or with 0: at its stop signal the app waits for open connections with no limit, so one long request, stream or websocket holds the pod until the SIGKILL cuts it off. Not reported for Jobs and CronJobs.",
		Fix:     "Set the app's shutdown timeout to what is left for it before the SIGKILL (the message gives the number): uvicorn --timeout-graceful-shutdown N, nginx worker_shutdown_timeout Ns in nginx.conf's main context.",
	},
	{
		ID: RuleGunicornDuration, Severity: Warning,
		Short:   "a gunicorn --graceful-timeout gunicorn refuses",
		Catches: "--graceful-timeout (on the command line or in GUNICORN_CMD_ARGS) that is not a whole number of seconds (30s, 1m) or is negative: gunicorn refuses it at start and the app does not run; the shutdown time goes unchecked.",
		Fix:     "Write a whole number of seconds: --graceful-timeout 30.",
	},
	{
		ID: RuleUvicornDuration, Severity: Warning,
		Short:   "a uvicorn --timeout-graceful-shutdown uvicorn refuses",
		Catches: "--timeout-graceful-shutdown (or UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN) that is not a whole number of seconds: uvicorn refuses it at start (not a valid integer) and the app does not run; the shutdown time goes unchecked.",
		Fix:     "Write a whole number of seconds: --timeout-graceful-shutdown 20.",
	},
	{
		ID: RuleDotnetDuration, Severity: Warning,
		Short:   "a .NET shutdown timeout that .NET ignores or reads otherwise than meant",
		Catches: "shutdownTimeoutSeconds (DOTNET_SHUTDOWNTIMEOUTSECONDS, ASPNETCORE_SHUTDOWNTIMEOUTSECONDS, the unprefixed variable or --shutdownTimeoutSeconds) that is not plain digits, which .NET silently ignores, keeping its default 30s; or HostOptions__ShutdownTimeout, a TimeSpan, written as a bare number (days) or as hh:mm (minutes meant as seconds?), or unreadable.",
		Fix:     "Write shutdownTimeoutSeconds as digits (30); write HostOptions__ShutdownTimeout as hh:mm:ss (00:00:30).",
	},
	{
		ID: RuleQuarkusDuration, Severity: Warning,
		Short:   "a Quarkus shutdown duration Quarkus cannot read",
		Catches: "quarkus.shutdown.timeout or quarkus.shutdown.delay (as -D in the command line or JAVA_OPTS, JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, JAVA_OPTS_APPEND, or QUARKUS_SHUTDOWN_TIMEOUT / QUARKUS_SHUTDOWN_DELAY) that is not a duration Quarkus reads (20, 20s, 500ms, 1m30s, PT20S) or is negative; the shutdown time goes unchecked.",
		Fix:     "Write a Quarkus duration: 20s, 1m30s or PT20S (a bare number is seconds).",
	},
	{
		ID: RuleQuarkusBuildTime, Severity: Warning,
		Short:   "quarkus.shutdown.delay-enabled set in the container, where it changes nothing",
		Catches: "quarkus.shutdown.delay-enabled is a build-time property: set in the container's environment or as a -D system property it is ignored (Quarkus warns at start that it is fixed at build time), so quarkus.shutdown.delay applies only if the application was built with it.",
		Fix:     "Set quarkus.shutdown.delay-enabled=true in application.properties and rebuild; keep quarkus.shutdown.delay in the container.",
	},
	{
		ID: RuleNginxDuration, Severity: Warning,
		Short:   "an nginx worker_shutdown_timeout nginx refuses",
		Catches: "worker_shutdown_timeout in -g or in a main nginx.conf mounted from a ConfigMap of the same input, with a time nginx cannot read (20 sec, 20sec) or with other than one argument: nginx refuses to start; the shutdown time goes unchecked.",
		Fix:     "Write one nginx time: worker_shutdown_timeout 20s; (units ms s m h d, a bare number is seconds).",
	},
	{
		ID: RuleIstioDuration, Severity: Warning,
		Short:   "an Istio proxy setting Istio cannot read",
		Catches: "The pod template's proxy.istio.io/config annotation is not YAML, or its terminationDrainDuration is not a protobuf duration (seconds with an s: 60s, not 1m or 60), or proxyMetadata MINIMUM_DRAIN_DURATION is not a Go duration: the sidecar's drain goes unchecked.",
		Fix:     "Write terminationDrainDuration as seconds with an s (\"60s\") and MINIMUM_DRAIN_DURATION as a Go duration (\"30s\").",
	},
	{
		ID: RuleIstioDrainApp, Severity: Error,
		Mixed:   "a warning unless the pod is known to run istio-proxy as a regular container (sidecar.istio.io/nativeSidecar: \"false\", or an istio-proxy container in the manifest); a native sidecar stops after the app",
		Short:   "the Istio sidecar stops before the app is done with the network",
		Catches: "As a regular container istio-proxy gets SIGTERM when the pod's stop begins and stops terminationDrainDuration later (5s by default), open connections or not; a container whose preStop, drainit drain and app shutdown take longer loses its network: requests arriving during its drain are refused and its outbound calls fail. With EXIT_ON_ZERO_ACTIVE_CONNECTIONS the proxy stops at the first quiet moment after MINIMUM_DRAIN_DURATION (5s by default), which must cover the preStop and drain.",
		Fix:     "Set terminationDrainDuration in proxy.istio.io/config to at least the container's stop (below terminationGracePeriodSeconds), or set proxyMetadata EXIT_ON_ZERO_ACTIVE_CONNECTIONS: \"true\" (with MINIMUM_DRAIN_DURATION covering the preStop and drain), or run istio-proxy as a native sidecar.",
	},
	{
		ID: RuleIstioDrainGrace, Severity: Warning,
		Short:   "the Istio sidecar's drain outlasts the grace period",
		Catches: "terminationDrainDuration not shorter than terminationGracePeriodSeconds (without EXIT_ON_ZERO_ACTIVE_CONNECTIONS): istio-agent waits the whole drain at every stop, even with nothing open, so every stop of the pod lasts the full grace period and istio-proxy ends with the kubelet's SIGKILL.",
		Fix:     "Make terminationDrainDuration shorter than the grace period and longer than the app's stop, or set proxyMetadata EXIT_ON_ZERO_ACTIVE_CONNECTIONS: \"true\".",
	},
	{
		ID: RuleIgnoreAnnotation, Severity: Warning,
		Short:   "the drainit.io/ignore annotation names an unknown rule",
		Catches: "An id in the drainit.io/ignore annotation that is no rule of this drainit: a misspelt id ignores nothing, and an id of a newer drainit is not known to this one.",
		Fix:     "Correct the id; `drainit check --help` lists the rules.",
	},
}

// Rules returns the metadata of every rule, in the order of the README's table.
func Rules() []RuleInfo {
	return append([]RuleInfo(nil), registry...)
}

// LookupRule returns the metadata of the rule with that id.
func LookupRule(id string) (RuleInfo, bool) {
	if i := ruleIndex(id); i >= 0 {
		return registry[i], true
	}
	return RuleInfo{}, false
}

// ruleIndex is the rule's position in Rules(), or -1.
func ruleIndex(id string) int {
	for i, r := range registry {
		if r.ID == id {
			return i
		}
	}
	return -1
}

// severityText is the severity column of the README's table and of the help text.
func (r RuleInfo) severityText() string {
	if r.Mixed != "" {
		return fmt.Sprintf("%s (%s)", r.Severity, r.Mixed)
	}
	return string(r.Severity)
}

// RulesMarkdown is the README's table of rules, generated so that the README cannot drift from
// the rules (a test compares the two).
func RulesMarkdown() string {
	var b strings.Builder
	b.WriteString("| Rule | Severity | What it catches | The fix |\n")
	b.WriteString("|---|---|---|---|\n")
	for _, r := range registry {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.ID, markdownText(r.severityText()), markdownText(r.Catches), markdownText(r.Fix))
	}
	return b.String()
}

// markdownText escapes what Markdown would take for a table's column, or for HTML.
func markdownText(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

// RulesHelp lists the rules for `drainit check --help`: id, severity and the one-line summary.
func RulesHelp() string {
	width := 0
	for _, r := range registry {
		width = max(width, len(r.ID))
	}
	var b strings.Builder
	for _, r := range registry {
		fmt.Fprintf(&b, "  %-*s  %-7s  %s\n", width, r.ID, r.Severity, r.Short)
	}
	return b.String()
}
