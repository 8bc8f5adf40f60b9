package check

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// wantFinding is a finding as a test pins it: where, how bad, which rule, and words of its message.
type wantFinding struct {
	line      int
	sev       Severity
	rule      string
	container string
	fragments []string
}

func (w wantFinding) String() string {
	return fmt.Sprintf("%d %s %s %q %q", w.line, w.sev, w.rule, w.container, w.fragments)
}

// checkFindings compares findings with what is wanted, in order.
func checkFindings(t *testing.T, fs []Finding, want []wantFinding) {
	t.Helper()
	ok := len(fs) == len(want)
	for i := 0; ok && i < len(fs); i++ {
		f, w := fs[i], want[i]
		if f.Line != w.line || f.Severity != w.sev || f.Rule != w.rule || f.Container != w.container {
			ok = false
		}
		for _, frag := range w.fragments {
			if !strings.Contains(f.Message, frag) {
				t.Errorf("finding %d (%s line %d): message lacks %q:\n%s", i, f.Rule, f.Line, frag, f.Message)
			}
		}
	}
	if !ok {
		var got bytes.Buffer
		for _, f := range fs {
			fmt.Fprintf(&got, "  %d %s %s %q: %s\n", f.Line, f.Severity, f.Rule, f.Container, f.Message)
		}
		t.Errorf("findings differ; got\n%swant\n  %v", got.String(), want)
	}
}

// TestAppRules pins every finding of the app manifests in testdata/rules: the app's documented
// default where nothing is set, its setting where one is, a value the app refuses or misreads,
// and the cases that must stay quiet (a fit, a config file the manifest does not show, envFrom).
func TestAppRules(t *testing.T) {
	const E, W, I = Error, Warning, Info
	cases := map[string][]wantFinding{
		"gunicorn": {
			{17, E, RuleShutdownGrace, "default", []string{"preStop 5s", "gunicorn's default --graceful-timeout 30s", gunicornDoc, "needs 35s"}},
			{32, E, RuleShutdownGrace, "env", []string{"gunicorn GUNICORN_CMD_ARGS --graceful-timeout 40", "needs 45s"}},
			{51, W, RuleGunicornDuration, "unit", []string{`--graceful-timeout "30s"`, "whole number of seconds", "not checked"}},
		},
		"uvicorn": {
			{12, I, RuleShutdownUnbounded, "unbounded", []string{"no --timeout-graceful-shutdown", "no limit", "at most 25s", "kubelet's SIGKILL", uvicornDoc}},
			{34, E, RuleShutdownGrace, "env", []string{"uvicorn UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN 25", "needs 35s"}},
			{39, W, RuleUvicornDuration, "unit", []string{`--timeout-graceful-shutdown "30s"`, "not a valid integer", "not checked"}},
			{50, E, RuleShutdownGrace, "gunicorn-worker", []string{"gunicorn's default --graceful-timeout 30s"}},
			{65, I, RuleShutdownUnbounded, "api", []string{"at most 33s", "drainit's SIGKILL"}},
		},
		"dotnet": {
			{18, E, RuleShutdownGrace, "default", []string{".NET's default HostOptions.ShutdownTimeout 30s since .NET 7", dotnetDoc, "needs 40s"}},
			{34, W, RuleDotnetDuration, "unit", []string{`DOTNET_SHUTDOWNTIMEOUTSECONDS "15s"`, "silently ignores", "keeps ShutdownTimeout 30s"}},
			{38, E, RuleShutdownGrace, "unit", []string{"default HostOptions.ShutdownTimeout 30s", "needs 40s"}},
			{56, W, RuleDotnetDuration, "timespan-days", []string{`HostOptions__ShutdownTimeout "20"`, "days (20.00:00:00)", "write 00:00:20"}},
			{72, E, RuleShutdownGrace, "timespan", []string{"HostOptions__ShutdownTimeout 00:00:25", "binds HostOptions", "needs 35s"}},
			{80, E, RuleShutdownGrace, "aspnet-image", []string{"default HostOptions.ShutdownTimeout 30s", "needs 35s"}},
		},
		"quarkus": {
			{17, E, RuleShutdownGrace, "env", []string{"Quarkus QUARKUS_SHUTDOWN_TIMEOUT 25s", "needs 35s"}},
			{37, E, RuleShutdownGrace, "delay", []string{"-Dquarkus.shutdown.delay 10s + -Dquarkus.shutdown.timeout PT15S", "app shutdown 25s", "needs 35s"}},
			{43, W, RuleQuarkusDuration, "unreadable", []string{`QUARKUS_SHUTDOWN_TIMEOUT "20 sec"`, "not a duration Quarkus reads", "not checked"}},
			{53, W, RuleQuarkusBuildTime, "build-time", []string{"QUARKUS_SHUTDOWN_DELAY_ENABLED is a build-time property", "rebuild", quarkusDoc}},
		},
		"nginx": {
			{27, I, RuleShutdownUnbounded, "none", []string{`ConfigMap "web-none" key nginx.conf, mounted at /etc/nginx/nginx.conf`, "no worker_shutdown_timeout", "at most 25s"}},
			{45, E, RuleShutdownGrace, "timeout", []string{`nginx worker_shutdown_timeout 25s in nginx.conf (ConfigMap "web-timeout"`, "needs 35s"}},
			{97, W, RuleNginxDuration, "unit", []string{"worker_shutdown_timeout 20sec in nginx -g", "not an nginx time", "refuses to start"}},
			{105, W, RuleNginxDuration, "two-args", []string{"2 arguments", "exactly one"}},
		},
		"istio": {
			{10, W, RuleIstioDrainApp, "app", []string{"stops 5s after", "Istio's default terminationDrainDuration 5s", "needs it for 10s", "refused", "at least 10s", "native sidecar"}},
			{52, W, RuleIstioDrainGrace, "", []string{"45s (terminationDrainDuration 45s in proxy.istio.io/config)", "terminationGracePeriodSeconds 30s", "SIGKILL"}},
			{71, W, RuleIstioDuration, "", []string{`terminationDrainDuration "1m"`, `like "60s"`, "not checked"}},
			{91, E, RuleIstioDrainApp, "app", []string{"stops 10s after", "needs it for 35s", "drainit's drain 10s", "Quarkus -Dquarkus.shutdown.timeout 20s", "at least 35s"}},
			{133, W, RuleIstioDrainApp, "app", []string{"EXIT_ON_ZERO_ACTIVE_CONNECTIONS", "after 5s (default MINIMUM_DRAIN_DURATION 5s)", "for 15s", "MINIMUM_DRAIN_DURATION to at least 15s"}},
		},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			_, fs := checkFile(t, filepath.Join("testdata/rules", name+".yaml"))
			checkFindings(t, fs, want)
		})
	}
}

// TestEveryAppRuleHasACase: each app rule fires in some testdata/rules manifest (and so in a
// golden file).
func TestEveryAppRuleHasACase(t *testing.T) {
	files, _ := filepath.Glob("testdata/rules/*.yaml")
	seen := map[string]bool{}
	for _, f := range files {
		_, fs := checkFile(t, f)
		for _, x := range fs {
			seen[x.Rule] = true
		}
	}
	for _, r := range []string{RuleShutdownUnbounded, RuleGunicornDuration, RuleUvicornDuration, RuleDotnetDuration,
		RuleQuarkusDuration, RuleQuarkusBuildTime, RuleNginxDuration, RuleIstioDuration, RuleIstioDrainApp, RuleIstioDrainGrace} {
		if !seen[r] {
			t.Errorf("rule %s fires in no testdata/rules manifest", r)
		}
	}
}

// TestAppEdges checks where one second, one word or one variable flips an app rule.
func TestAppEdges(t *testing.T) {
	ps5 := "lifecycle: {preStop: {sleep: {seconds: 5}}}"
	cases := []struct {
		name, grace, container, want string
	}{
		// gunicorn: the default 30s needs grace ≥ preStop + 30.
		{"gunicorn default fits exactly", "35", "image: x\ncommand: [gunicorn, app]\n" + ps5, ""},
		{"gunicorn default one second over", "34", "image: x\ncommand: [gunicorn, app]\n" + ps5, "error:shutdown-exceeds-grace"},
		{"gunicorn from a path", "34", "image: x\ncommand: [/usr/local/bin/gunicorn, app]\n" + ps5, "error:shutdown-exceeds-grace"},
		{"gunicorn -c file: no default", "20", "image: x\ncommand: [gunicorn, -c, conf.py, app]\n" + ps5, ""},
		{"gunicorn --config=: no default", "20", "image: x\ncommand: [gunicorn, --config=conf.py, app]\n" + ps5, ""},
		{"gunicorn config in GUNICORN_CMD_ARGS: no default", "20", "image: x\ncommand: [gunicorn, app]\nenv: [{name: GUNICORN_CMD_ARGS, value: '-c conf.py'}]\n" + ps5, ""},
		{"gunicorn envFrom: no default", "20", "image: x\ncommand: [gunicorn, app]\nenvFrom: [{configMapRef: {name: g}}]\n" + ps5, ""},
		{"GUNICORN_CMD_ARGS from a Secret: not known", "20", "image: x\ncommand: [gunicorn, app]\nenv: [{name: GUNICORN_CMD_ARGS, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n" + ps5, ""},
		{"gunicorn 0 fits anything", "6", "image: x\ncommand: [gunicorn, --graceful-timeout, '0', app]\n" + ps5, ""},
		{"gunicorn negative", "30", "image: x\ncommand: [gunicorn, --graceful-timeout, '-1', app]\n" + ps5, "warning:gunicorn-duration"},
		{"gunicorn value from $(VAR)", "30", "image: x\ncommand: [gunicorn, --graceful-timeout, $(T), app]\nenv: [{name: T, value: '40'}]\n" + ps5, "error:shutdown-exceeds-grace"},
		{"gunicorn after --: not an option", "30", "image: x\ncommand: [gunicorn, app, --, --graceful-timeout, '90']\n" + ps5, "error:shutdown-exceeds-grace"},
		{"a word gunicorn inside another: not gunicorn", "30", "image: x\ncommand: [/app, --name=gunicorn-like]\n" + ps5, ""},
		// uvicorn.
		{"uvicorn set fits exactly", "30", "image: x\ncommand: [uvicorn, app, --timeout-graceful-shutdown, '25']\n" + ps5, ""},
		{"uvicorn set one over", "30", "image: x\ncommand: [uvicorn, app, --timeout-graceful-shutdown, '26']\n" + ps5, "error:shutdown-exceeds-grace"},
		{"uvicorn command line beats env", "30", "image: x\ncommand: [uvicorn, app, --timeout-graceful-shutdown=5]\nenv: [{name: UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN, value: '90'}]\n" + ps5, ""},
		{"uvicorn envFrom: not unbounded", "30", "image: x\ncommand: [uvicorn, app]\nenvFrom: [{secretRef: {name: u}}]\n" + ps5, ""},
		{"uvicorn in a shell script", "30", "image: x\ncommand: [sh, -c, 'alembic upgrade head && exec uvicorn app --timeout-graceful-shutdown 40']\n" + ps5, "error:shutdown-exceeds-grace"},
		{"uvicorn with $VAR in a script: not known", "30", "image: x\ncommand: [sh, -c, 'exec uvicorn app --timeout-graceful-shutdown $T']\n" + ps5, ""},
		{"uvicorn without a timeout", "30", "image: x\ncommand: [uvicorn, app]\n" + ps5, "info:shutdown-unbounded"},
		// .NET.
		{".NET 0 is 0", "30", "image: x\nenv: [{name: DOTNET_SHUTDOWNTIMEOUTSECONDS, value: '0'}]\n" + ps5, ""},
		{".NET sign is ignored: default", "30", "image: x\nenv: [{name: DOTNET_SHUTDOWNTIMEOUTSECONDS, value: '+10'}]\n" + ps5, "warning:dotnet-duration,error:shutdown-exceeds-grace"},
		{".NET key case-insensitive", "30", "image: x\nenv: [{name: dotnet_shutdownTimeoutSeconds, value: '40'}]\n" + ps5, "error:shutdown-exceeds-grace"},
		{".NET ASPNETCORE_ prefix", "30", "image: x\nenv: [{name: ASPNETCORE_SHUTDOWNTIMEOUTSECONDS, value: '10'}]\n" + ps5, ""},
		{".NET command line beats env", "30", "image: x\nargs: [--shutdownTimeoutSeconds=10]\nenv: [{name: DOTNET_SHUTDOWNTIMEOUTSECONDS, value: '60'}]\n" + ps5, ""},
		{".NET command line, value next", "30", "image: x\nargs: [--shutdownTimeoutSeconds, '60']\n" + ps5, "error:shutdown-exceeds-grace"},
		{".NET TimeSpan hh:mm", "30", "image: x\nenv: [{name: HostOptions__ShutdownTimeout, value: '00:45'}, {name: DOTNET_SHUTDOWNTIMEOUTSECONDS, value: '10'}]\n" + ps5, "warning:dotnet-duration"},
		{".NET TimeSpan unreadable", "30", "image: x\nenv: [{name: HostOptions__ShutdownTimeout, value: 45s}]\n" + ps5, "warning:dotnet-duration"},
		{"ASPNETCORE_ENVIRONMENT alone: the default", "34", "image: x\nenv: [{name: ASPNETCORE_ENVIRONMENT, value: Production}]\n" + ps5, "error:shutdown-exceeds-grace"},
		{"DOTNET_ variables alone: not a host", "20", "image: x\nenv: [{name: DOTNET_gcServer, value: '1'}]\n" + ps5, ""},
		{"dotnet app.dll alone: not known to be a host", "20", "image: x\ncommand: [dotnet, app.dll]\n" + ps5, ""},
		// Quarkus.
		{"Quarkus unset: shuts down at once", "10", "image: x\nenv: [{name: QUARKUS_HTTP_PORT, value: '8080'}]\n" + ps5, ""},
		{"Quarkus bare number is seconds", "30", "image: x\nenv: [{name: QUARKUS_SHUTDOWN_TIMEOUT, value: '26'}]\n" + ps5, "error:shutdown-exceeds-grace"},
		{"Quarkus 1m30s", "95", "image: x\nenv: [{name: QUARKUS_SHUTDOWN_TIMEOUT, value: 1m30s}]\n" + ps5, ""},
		{"Quarkus 1m30s one over", "94", "image: x\nenv: [{name: QUARKUS_SHUTDOWN_TIMEOUT, value: 1m30s}]\n" + ps5, "error:shutdown-exceeds-grace"},
		{"Quarkus ms", "30", "image: x\nenv: [{name: QUARKUS_SHUTDOWN_TIMEOUT, value: 500ms}]\n" + ps5, ""},
		{"Quarkus JAVA_TOOL_OPTIONS", "30", "image: x\nenv: [{name: JAVA_TOOL_OPTIONS, value: '-Dquarkus.shutdown.timeout=40s'}]\n" + ps5, "error:shutdown-exceeds-grace"},
		{"Quarkus from a Secret: not known", "30", "image: x\nenv: [{name: QUARKUS_SHUTDOWN_TIMEOUT, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n" + ps5, ""},
		// nginx.
		{"nginx -g fits exactly", "30", "image: x\ncommand: [nginx, -g, 'worker_shutdown_timeout 25s;']\n" + ps5, ""},
		{"nginx -g one over", "30", "image: x\ncommand: [nginx, -g, 'worker_shutdown_timeout 26s;']\n" + ps5, "error:shutdown-exceeds-grace"},
		{"nginx -g bare number is seconds", "30", "image: x\ncommand: [nginx, -g, 'worker_shutdown_timeout 26;']\n" + ps5, "error:shutdown-exceeds-grace"},
		{"nginx -g attached", "30", "image: x\ncommand: [nginx, '-gworker_shutdown_timeout 1m;']\n" + ps5, "error:shutdown-exceeds-grace"},
		{"nginx -g 0 is no timer", "30", "image: x\ncommand: [nginx, -g, 'worker_shutdown_timeout 0;']\n" + ps5, "info:shutdown-unbounded"},
		{"nginx -g without the directive: config unknown", "30", "image: x\ncommand: [nginx, -g, 'daemon off;']\n" + ps5, ""},
		{"nginx under drainit --stop-signal QUIT", "40", "image: x\ncommand: [/drainit, --stop-signal=QUIT, --grace-period=40s, --, nginx, -g, 'worker_shutdown_timeout 40s;']\n", "error:shutdown-exceeds-grace"},
		{"nginx under drainit --stop-signal TERM: fast stop", "40", "image: x\ncommand: [/drainit, --stop-signal=TERM, --grace-period=40s, --, nginx, -g, 'worker_shutdown_timeout 40s;']\n", ""},
		{"nginx in a comment of -g: not set", "30", "image: x\ncommand: [nginx, -g, '# worker_shutdown_timeout 60s;\ndaemon off;']\n" + ps5, ""},
		{"nginx-ingress image: not nginx", "30", "image: nginx/nginx-ingress:3.0\n" + ps5, ""},
		// Istio.
		{"Istio drain covers the preStop", "30", "image: x\n" + ps5, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := pod(c.grace, c.container)
			ws, err := Read("p.yaml", strings.NewReader(in))
			if err != nil {
				t.Fatalf("Read: %v\n%s", err, in)
			}
			if got := rules(Check(ws)); got != c.want {
				t.Errorf("got %q, want %q; findings: %+v", got, c.want, Check(ws))
			}
		})
	}
}

// istioPodYAML builds a Deployment with pod template metadata and one container.
func istioPodYAML(meta, grace, container string) string {
	s := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
	if meta != "" {
		s += "    metadata:\n" + indent(meta, "      ") + "\n"
	}
	s += "    spec:\n"
	if grace != "" {
		s += "      terminationGracePeriodSeconds: " + grace + "\n"
	}
	return s + "      containers:\n      - name: app\n" + indent(container, "        ") + "\n"
}

// TestIstioEdges checks the sidecar rules' boundaries and evidence.
func TestIstioEdges(t *testing.T) {
	ps := func(n int) string { return fmt.Sprintf("image: x\nlifecycle: {preStop: {sleep: {seconds: %d}}}", n) }
	cfg := func(c string) string { return "annotations:\n  proxy.istio.io/config: |\n" + indent(c, "    ") }
	const app, grace = "warning:istio-drain-before-app", "warning:istio-drain-exceeds-grace"
	cases := []struct {
		name, meta, grace, container, want string
	}{
		{"default 5s covers a 5s preStop", "labels: {sidecar.istio.io/inject: 'true'}", "", ps(5), ""},
		{"default 5s, 6s preStop", "labels: {sidecar.istio.io/inject: 'true'}", "", ps(6), app},
		{"annotation form of inject", "annotations: {sidecar.istio.io/inject: 'true'}", "", ps(6), app},
		{"no evidence: no rule", "labels: {app: x}", "", ps(6), ""},
		{"inject false wins", "labels: {sidecar.istio.io/inject: 'false'}\n" + cfg("terminationDrainDuration: 1s"), "", ps(6), ""},
		{"drain set covers it", cfg("terminationDrainDuration: 6s"), "", ps(6), ""},
		{"fractional seconds", cfg("terminationDrainDuration: 5.5s"), "", ps(6), app},
		{"drain equal to grace", cfg("terminationDrainDuration: 30s"), "30", ps(5), grace},
		{"drain one under grace", cfg("terminationDrainDuration: 29s"), "30", ps(5), ""},
		{"exit on zero: no grace rule", cfg("terminationDrainDuration: 60s\nproxyMetadata: {EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true'}"), "30", ps(5), ""},
		{"exit on zero, min drain covers", cfg("proxyMetadata: {EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true', MINIMUM_DRAIN_DURATION: 20s}"), "", ps(15), ""},
		{"exit on zero, bad min drain", cfg("proxyMetadata: {EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true', MINIMUM_DRAIN_DURATION: twenty}"), "", ps(15), "warning:istio-duration"},
		{"bare number", cfg("terminationDrainDuration: 60"), "", ps(5), "warning:istio-duration"},
		{"not YAML", "annotations:\n  proxy.istio.io/config: '{terminationDrainDuration: [}'", "", ps(5), "warning:istio-duration"},
		{"native sidecar", "annotations: {sidecar.istio.io/nativeSidecar: 'true', sidecar.istio.io/inject: 'true'}", "", ps(10), ""},
		{"regular sidecar: error", "annotations: {sidecar.istio.io/nativeSidecar: 'false', sidecar.istio.io/inject: 'true'}", "", ps(10), "error:istio-drain-before-app"},
		{"app time counts", cfg("terminationDrainDuration: 20s"), "", "image: x\ncommand: [uvicorn, app, --timeout-graceful-shutdown, '16']\nlifecycle: {preStop: {sleep: {seconds: 5}}}", app},
		{"drainit's drain counts", cfg("terminationDrainDuration: 10s"), "", "image: x\ncommand: [/drainit, --drain-delay=11s, --, /app]", app},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := istioPodYAML(c.meta, c.grace, c.container)
			ws, err := Read("p.yaml", strings.NewReader(in))
			if err != nil {
				t.Fatalf("Read: %v\n%s", err, in)
			}
			if got := rules(Check(ws)); got != c.want {
				t.Errorf("got %q, want %q; findings: %+v\n%s", got, c.want, Check(ws), in)
			}
		})
	}
	// An injected pod as kubectl get shows it: istio-proxy among the containers is a regular
	// sidecar, and is not itself checked against the drain.
	in := istioPodYAML("", "", "image: x\nlifecycle: {preStop: {sleep: {seconds: 10}}}") +
		"      - name: istio-proxy\n        image: docker.io/istio/proxyv2:1.26.0\n"
	ws, err := Read("p.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatalf("Read: %v\n%s", err, in)
	}
	var fs []Finding
	for _, f := range Check(ws) {
		if strings.HasPrefix(f.Rule, "istio-") {
			fs = append(fs, f)
		}
	}
	if got := rules(fs); got != "error:istio-drain-before-app" || fs[0].Container != "app" {
		t.Errorf("injected pod: got %q %+v, want one error for container app\n%s", got, fs, in)
	}
}

// TestConfigMapLinking: a ConfigMap reaches the containers that mount it only from the same
// input, by name and namespace, through items and subPath, before or after the workload, and in
// a List; the streaming reader and the whole-document reader agree.
func TestConfigMapLinking(t *testing.T) {
	cm := func(name, ns, conf string) string {
		s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s + "data:\n  main: |\n" + indent(conf, "    ") + "\n"
	}
	dep := func(ns, volume, mount string) string {
		s := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s + "spec:\n  template:\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1.27\n" +
			"        lifecycle: {preStop: {sleep: {seconds: 1}}}\n" +
			"        volumeMounts:\n" + indent(mount, "        ") + "\n      volumes:\n" + indent(volume, "      ") + "\n"
	}
	const conf = "worker_shutdown_timeout 40s;\nevents {}"
	items := "- name: c\n  configMap:\n    name: web\n    items: [{key: main, path: nginx.conf}]"
	plain := "- name: c\n  configMap: {name: web}"
	dir := "- {name: c, mountPath: /etc/nginx}"
	sub := "- {name: c, mountPath: /etc/nginx/nginx.conf, subPath: nginx.conf}"
	const hit = "error:shutdown-exceeds-grace"
	cases := []struct {
		name, in, want string
	}{
		{"items to nginx.conf, directory mount", cm("web", "", conf) + "---\n" + dep("", items, dir), hit},
		{"ConfigMap after the Deployment", dep("", items, dir) + "---\n" + cm("web", "", conf), hit},
		{"items and subPath", cm("web", "", conf) + "---\n" + dep("", items, sub), hit},
		{"key not named nginx.conf: no file there", cm("web", "", conf) + "---\n" + dep("", plain, dir), ""},
		{"subPath of another key", cm("web", "", conf) + "---\n" + dep("", plain, "- {name: c, mountPath: /etc/nginx/nginx.conf, subPath: other}"), ""},
		{"same namespace", cm("web", "shop", conf) + "---\n" + dep("shop", items, dir), hit},
		{"other namespace", cm("web", "other", conf) + "---\n" + dep("shop", items, dir), ""},
		{"other name", cm("web2", "", conf) + "---\n" + dep("", items, dir), ""},
		{"subPathExpr: not followed", cm("web", "", conf) + "---\n" + dep("", items, "- {name: c, mountPath: /etc/nginx/nginx.conf, subPathExpr: $(F)}"), ""},
		{"a main config that includes others: not known", cm("web", "", "include /etc/nginx/main.d/*.conf;\nevents {}") + "---\n" + dep("", items, dir), ""},
		{"a broken main config: not known", cm("web", "", "events {") + "---\n" + dep("", items, dir), ""},
		{"in a List", "apiVersion: v1\nkind: List\nitems:\n" + indent("- "+strings.ReplaceAll(strings.TrimSpace(cm("web", "", conf)), "\n", "\n  "), "") +
			"\n" + "- " + strings.ReplaceAll(strings.TrimSpace(dep("", items, dir)), "\n", "\n  ") + "\n", hit},
		{"in a non-List's items: not read", "apiVersion: v1\nkind: Thing\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(cm("web", "", conf)), "\n", "\n  ") +
			"\n---\n" + dep("", items, dir), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, err := Read("p.yaml", strings.NewReader(c.in))
			if err != nil {
				t.Fatalf("Read: %v\n%s", err, c.in)
			}
			whole, err := readWhole("p.yaml", strings.NewReader(c.in))
			if err != nil || !reflect.DeepEqual(ws, whole) {
				t.Errorf("streaming and whole reading differ: %v\n%+v\n%+v", err, ws, whole)
			}
			if got := rules(Check(ws)); got != c.want {
				t.Errorf("got %q, want %q; findings %+v\n%s", got, c.want, Check(ws), c.in)
			}
		})
	}
	// Each file is its own input: a ConfigMap in another file is not linked.
	ws, err := Read("a.yaml", strings.NewReader(dep("", items, dir)))
	if err != nil || rules(Check(ws)) != "" {
		t.Errorf("Deployment alone: %v %q", err, rules(Check(ws)))
	}
}

func TestScanNginx(t *testing.T) {
	cases := []struct {
		text        string
		first       int
		exact       bool
		want        nginxMain
		description string
	}{
		{"worker_shutdown_timeout 10s;", 5, true, nginxMain{value: "10s", line: 5, set: true, args: 1}, "one line"},
		{"user nginx;\n\n  worker_shutdown_timeout   1m ;\n", 10, true, nginxMain{value: "1m", line: 12, set: true, args: 1}, "its line"},
		{"a;\nworker_shutdown_timeout 1m;", 7, false, nginxMain{value: "1m", line: 7, set: true, args: 1}, "lines not exact"},
		{"http { worker_shutdown_timeout 5s; }", 1, true, nginxMain{line: 1}, "not in the main context"},
		{"# worker_shutdown_timeout 5s;\nevents {}", 1, true, nginxMain{line: 1}, "a comment"},
		{"worker_shutdown_timeout \"5s\";", 1, true, nginxMain{value: "5s", line: 1, set: true, args: 1}, "quoted"},
		{"worker_shutdown_timeout 5s 6s;", 1, true, nginxMain{value: "5s", line: 1, set: true, args: 2}, "two arguments"},
		{"worker_shutdown_timeout;", 1, true, nginxMain{line: 1, set: true}, "no argument"},
		{"include /etc/nginx/modules/*.conf;", 3, true, nginxMain{line: 3, include: true}, "include"},
		{"http { include conf.d/*.conf; }", 3, true, nginxMain{line: 3}, "include in http"},
		{"events {", 1, true, nginxMain{line: 1, bad: true}, "unclosed brace"},
		{"}", 1, true, nginxMain{bad: true}, "stray brace"},
		{"a \"b;", 1, true, nginxMain{bad: true}, "unclosed quote"},
		{"set $x \"${host}\"; worker_shutdown_timeout 2s;", 1, true, nginxMain{value: "2s", line: 1, set: true, args: 1}, "a variable"},
		{"return 200 ${host}; worker_shutdown_timeout 2s;", 1, true, nginxMain{value: "2s", line: 1, set: true, args: 1}, "${var} unquoted"},
		{"a 'x\ny'\n;\nworker_shutdown_timeout 3s;", 1, true, nginxMain{value: "3s", line: 4, set: true, args: 1}, "a newline in quotes"},
		{"worker_shutdown_timeout 4s; worker_shutdown_timeout 5s;", 1, true, nginxMain{value: "5s", line: 1, set: true, args: 1}, "the last one"},
	}
	for _, c := range cases {
		if got := scanNginx(c.text, c.first, c.exact); got != c.want {
			t.Errorf("%s: scanNginx(%q) = %+v, want %+v", c.description, c.text, got, c.want)
		}
	}
}

func TestParseNginxTime(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true},
		{"30", 30 * time.Second, true},
		{"500ms", 500 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"1m 30s", 90 * time.Second, true},
		{"1m30", 90 * time.Second, true},
		{"1h", time.Hour, true},
		{"1d", 24 * time.Hour, true},
		{"1w", 7 * 24 * time.Hour, true},
		{"1M", 30 * 24 * time.Hour, true},
		{"1y", 365 * 24 * time.Hour, true},
		{"0", 0, true},
		{"30s1m", 0, false},
		{"1m1m", 0, false},
		{"30 sec", 0, false},
		{"30sec", 0, false},
		{"s", 0, false},
		{"", 0, false},
		{"-5s", 0, false},
		{"1.5s", 0, false},
		{"99999999999999999999s", 0, false},
	}
	for _, c := range cases {
		got, err := parseNginxTime(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseNginxTime(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestParseTimeSpan(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"00:00:30", 30 * time.Second, true},
		{" 00:01:30 ", 90 * time.Second, true},
		{"0:0:5", 5 * time.Second, true},
		{"00:45", 45 * time.Minute, true},
		{"1.00:00:00", 24 * time.Hour, true},
		{"00:00:01.5", 1500 * time.Millisecond, true},
		{"00:00:00.1234567", 123456700 * time.Nanosecond, true},
		{"45", 45 * 24 * time.Hour, true},
		{"24:00:00", 0, false},
		{"00:60:00", 0, false},
		{"00:00:60", 0, false},
		{"-00:00:30", 0, false},
		{"30s", 0, false},
		{"00:00:30.", 0, false},
		{"1:2:3:4", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		got, err := parseTimeSpan(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseTimeSpan(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestParseQuarkusDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"20", 20 * time.Second, true},
		{"20s", 20 * time.Second, true},
		{"20S", 20 * time.Second, true},
		{"500ms", 500 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"1.5s", 1500 * time.Millisecond, true},
		{"2h", 2 * time.Hour, true},
		{"1d", 24 * time.Hour, true},
		{"PT20S", 20 * time.Second, true},
		{"pt20s", 20 * time.Second, true},
		{"P1DT1S", 24*time.Hour + time.Second, true},
		{" 20s ", 20 * time.Second, true},
		{"20 sec", 0, false},
		{"20sec", 0, false},
		{"1.5m", 0, false},
		{"-5s", 0, false},
		{"-5", 0, false},
		{"s", 0, false},
	}
	for _, c := range cases {
		got, err := parseQuarkusDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseQuarkusDuration(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestParsePythonInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"30", 30, true}, {" 30 ", 30, true}, {"+30", 30, true}, {"-1", -1, true}, {"1_000", 1000, true},
		{"30s", 0, false}, {"0x1e", 0, false}, {"3.0", 0, false}, {"", 0, false}, {"_1", 0, false}, {"1__0", 0, false},
		{"99999999999999999999999", 0, false},
	}
	for _, c := range cases {
		got, ok := parsePythonInt(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("parsePythonInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestAppImages(t *testing.T) {
	for image, want := range map[string]bool{
		"nginx": true, "nginx:1.27": true, "docker.io/library/nginx:1.27-alpine": true, "bitnami/nginx:1.27": true,
		"nginxinc/nginx-unprivileged:1.27": true, "cgr.dev/chainguard/nginx@sha256:abc": true, "registry:5000/nginx": true,
		"nginx/nginx-ingress:3.0": false, "nginx/nginx-prometheus-exporter": false, "registry.example.com/web:1": false,
	} {
		if got := nginxImage(image); got != want {
			t.Errorf("nginxImage(%q) = %v, want %v", image, got, want)
		}
	}
	for image, want := range map[string]bool{
		"mcr.microsoft.com/dotnet/aspnet:8.0": true, "mcr.microsoft.com/dotnet/aspnet": true,
		"mcr.microsoft.com/dotnet/runtime:8.0": false, "registry.example.com/orders:1": false,
	} {
		if got := aspnetImage(image); got != want {
			t.Errorf("aspnetImage(%q) = %v, want %v", image, got, want)
		}
	}
}

// FuzzScanNginx: the nginx reader never panics, and what it returns points inside the text.
func FuzzScanNginx(f *testing.F) {
	for _, s := range []string{"worker_shutdown_timeout 10s;", "http { include a; }\nworker_shutdown_timeout '1m 2s';",
		"a \"b\\\"c\" ${x} # c\n}", "{{{", "worker_shutdown_timeout 1y2M3w4d5h6m7s8ms;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m := scanNginx(text, 1, true)
		if m.line < 0 || m.line > 1+strings.Count(text, "\n") {
			t.Fatalf("line %d outside the text's %d lines", m.line, 1+strings.Count(text, "\n"))
		}
		if m.set && m.args == 1 {
			if d, err := parseNginxTime(m.value); err == nil && d < 0 {
				t.Fatalf("negative time %v from %q", d, m.value)
			}
		}
	})
}

// TestDotnetSameEveryRun: .NET's settings were gathered in the environment map's order, which Go
// makes random: the finding's line, and with two spellings of one setting its outcome, changed
// from run to run (SARIF fingerprints, CI diffs, the exit status).
func TestDotnetSameEveryRun(t *testing.T) {
	pod := func(env string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: 20\n  containers:\n  - name: api\n    image: x\n" +
			"    command: [/drainit, --grace-period=20s, --, /app]\n    env:\n" + env
	}
	cases := []struct{ name, env, want string }{
		{"the first ASPNETCORE_ variable is the evidence",
			"    - {name: ASPNETCORE_URLS, value: 'http://+:80'}\n    - {name: ASPNETCORE_ENVIRONMENT, value: prod}\n" +
				"    - {name: ASPNETCORE_HTTP_PORTS, value: '80'}\n    - {name: ASPNETCORE_FORWARDEDHEADERS_ENABLED, value: 'true'}\n",
			"11 error:shutdown-exceeds-grace"},
		{"two spellings of one setting: the later counts",
			"    - {name: DOTNET_SHUTDOWNTIMEOUTSECONDS, value: '10'}\n    - {name: Dotnet_ShutdownTimeoutSeconds, value: '60'}\n",
			"12 error:shutdown-exceeds-grace"},
		{"two spellings, the shorter later",
			"    - {name: Dotnet_ShutdownTimeoutSeconds, value: '60'}\n    - {name: DOTNET_SHUTDOWNTIMEOUTSECONDS, value: '10'}\n",
			""},
	}
	for _, c := range cases {
		for range 30 {
			ws, err := Read("p.yaml", strings.NewReader(pod(c.env)))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if fs := Check(ws); len(fs) > 0 {
				got = fmt.Sprintf("%d %s", fs[0].Line, rules(fs))
			}
			if got != c.want {
				t.Fatalf("%s: got %q, want %q", c.name, got, c.want)
			}
		}
	}
}
