package check_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/drainit/drainit/internal/config"
)

// TestExamplesDecodeStrictly: the example manifests (examples/kubernetes) decode strictly into the real
// Kubernetes API types (a misspelt field fails), and drainit's settings in them agree with the
// pod's grace period. k8s.io/api is a test-only dependency of the check's module, not of the init's.
func TestExamplesDecodeStrictly(t *testing.T) {
	files, _ := filepath.Glob("../examples/kubernetes/*.yaml")
	if len(files) < 4 {
		t.Fatalf("found %d example manifests, want the service and three deployments", len(files))
	}
	forms := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch meta.Kind {
		case "Service":
			var s corev1.Service
			if err := yaml.UnmarshalStrict(b, &s); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.UnmarshalStrict(b, &d); err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			forms[checkDeployment(t, f, &d)] = true
		default:
			t.Errorf("%s: unexpected kind %q", f, meta.Kind)
		}
	}
	for _, form := range []string{"httpGet", "exec prestop", "exec sleep"} {
		if !forms[form] {
			t.Errorf("no example of the %s preStop form", form)
		}
	}
}

// checkDeployment checks drainit's budget against the pod's and returns the preStop form.
func checkDeployment(t *testing.T, file string, d *appsv1.Deployment) string {
	t.Helper()
	spec := d.Spec.Template.Spec
	if spec.TerminationGracePeriodSeconds == nil {
		t.Errorf("%s: terminationGracePeriodSeconds not set", file)
		return ""
	}
	podGrace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	c := spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		} else {
			env[e.Name] = "from-secret"
		}
	}
	cfg, err := config.Parse([]string{"/app"}, env, nil)
	if err != nil {
		t.Errorf("%s: drainit would refuse its settings: %v", file, err)
		return ""
	}
	// The kubelet runs httpGet probes from the node: a host of loopback is the node's own.
	for what, p := range map[string]*corev1.Probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe, "startupProbe": c.StartupProbe} {
		if p != nil && p.HTTPGet != nil && (p.HTTPGet.Host == "127.0.0.1" || p.HTTPGet.Host == "localhost" || p.HTTPGet.Host == "::1") {
			t.Errorf("%s: the %s's host %s is the node's loopback, where the kubelet probes from, not the pod's", file, what, p.HTTPGet.Host)
		}
	}
	pre := c.Lifecycle.PreStop
	var form string
	want := podGrace
	switch {
	case pre.HTTPGet != nil:
		form = "httpGet"
		if pre.HTTPGet.Path != "/prestop" || !strings.HasSuffix(cfg.HTTPAddr, ":"+pre.HTTPGet.Port.String()) {
			t.Errorf("%s: httpGet %s:%s does not reach drainit's control server %q", file, pre.HTTPGet.Port.String(), pre.HTTPGet.Path, cfg.HTTPAddr)
		}
	case pre.Exec != nil && len(pre.Exec.Command) >= 2 && pre.Exec.Command[1] == "prestop":
		form = "exec prestop"
		if cfg.HTTPAddr == "" {
			t.Errorf("%s: drainit prestop with the control server off", file)
		}
	case pre.Exec != nil && len(pre.Exec.Command) == 3 && pre.Exec.Command[1] == "sleep":
		form = "exec sleep"
		s, err := config.ParseDuration(pre.Exec.Command[2])
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		want = podGrace - s // drainit's clock starts at the SIGTERM after the sleep
	default:
		t.Errorf("%s: unknown preStop form", file)
	}
	if cfg.GracePeriod != want {
		t.Errorf("%s: DRAINIT_GRACE_PERIOD %v, want %v to match the pod", file, cfg.GracePeriod, want)
	}
	return form
}
