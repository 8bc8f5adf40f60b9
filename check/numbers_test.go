package check

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// numberFields are the integer fields the reader takes, each as a pod with the value in it.
var numberFields = []struct {
	name string
	doc  func(v string) string
	// got is what Read made of it; ok is false when the field was absent or null.
	got func(w Workload) (int64, bool)
	// want is what the API server stores; ok is false when it is unset.
	want func(p *corev1.Pod) (int64, bool)
}{
	{
		"terminationGracePeriodSeconds",
		func(v string) string { return numberPod(v, "0", "80", "80") },
		func(w Workload) (int64, bool) { return int64(w.Grace.Seconds()), w.GraceSet },
		func(p *corev1.Pod) (int64, bool) {
			if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
				return int64(seconds(*g).Seconds()), true
			}
			return 0, false
		},
	},
	{
		"sleep.seconds",
		func(v string) string { return numberPod("30", v, "80", "80") },
		func(w Workload) (int64, bool) { return w.Containers[0].PreStop.Sleep, w.Containers[0].PreStop.IsSleep },
		func(p *corev1.Pod) (int64, bool) {
			if s := p.Spec.Containers[0].Lifecycle.PreStop.Sleep; s != nil {
				return s.Seconds, true
			}
			return 0, false
		},
	},
	{
		"containerPort",
		func(v string) string { return numberPod("30", "0", v, "80") },
		func(w Workload) (int64, bool) { return int64(w.Containers[0].Ports[0].Number), true },
		func(p *corev1.Pod) (int64, bool) {
			return int64(min(max(p.Spec.Containers[0].Ports[0].ContainerPort, 0), 1<<16)), true
		},
	},
	{
		"readinessProbe.httpGet.port",
		func(v string) string { return numberPod("30", "0", "80", v) },
		func(w Workload) (int64, bool) {
			g := w.Containers[0].Probes[0].HTTP
			return int64(g.Port), g.PortName == ""
		},
		func(p *corev1.Pod) (int64, bool) {
			return int64(min(max(p.Spec.Containers[0].ReadinessProbe.HTTPGet.Port.IntVal, 0), 1<<16)), true
		},
	},
}

func numberPod(grace, sleep, port, probePort string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: " + grace +
		"\n  containers:\n  - name: c\n    image: x\n    ports:\n    - containerPort: " + port +
		"\n    readinessProbe:\n      httpGet:\n        port: " + probePort +
		"\n    lifecycle:\n      preStop:\n        sleep:\n          seconds: " + sleep + "\n"
}

// numberAgrees reads one value in each integer field with Read and with sigs.k8s.io/yaml into
// the API's types (YAML to JSON as kubectl does, then encoding/json, which decodes numbers as the
// API server's sigs.k8s.io/json does), and fails when they differ on whether it is taken or on
// the value.
func numberAgrees(t *testing.T, v string) {
	t.Helper()
	for _, f := range numberFields {
		doc := f.doc(v)
		var p corev1.Pod
		refErr := yaml.Unmarshal([]byte(doc), &p)
		if refErr != nil && strings.Contains(refErr.Error(), "error converting YAML to JSON: yaml:") {
			continue // not YAML sigs.k8s.io/yaml reads: the field's value was never looked at
		}
		ws, err := Read("n.yaml", bytes.NewReader([]byte(doc)))
		if err != nil && !strings.Contains(err.Error(), f.name) {
			continue // the value broke the document's structure for yaml.v3 (a comment, a flow)
		}
		if f.name == "sleep.seconds" && err != nil && refErr == nil && p.Spec.Containers[0].Lifecycle.PreStop.Sleep.Seconds < 0 {
			continue // decoded, then refused by the API server's validateSleepAction, as by Read
		}
		if f.name == "readinessProbe.httpGet.port" && refErr == nil && p.Spec.Containers[0].ReadinessProbe.HTTPGet.Port.Type == 1 {
			continue // a name, decoded: Read refuses a quoted number as the API server's validation does (FuzzPortName)
		}
		switch {
		case (err == nil) != (refErr == nil):
			t.Errorf("%s: %q: Read says %v, the API's decoding %v", f.name, v, err, refErr)
		case err == nil:
			got, gotOK := f.got(ws[0])
			want, wantOK := f.want(&p)
			if gotOK != wantOK || gotOK && got != want {
				t.Errorf("%s: %q: Read takes %d (set: %v), the API's decoding %d (set: %v)", f.name, v, got, gotOK, want, wantOK)
			}
		}
	}
}

// numberForms are the spellings of numbers checked against the API's decoding, and the fuzz
// target's seeds.
var numberForms = []string{
	"30", "0", "-1", "-0", "+30", "3e1", "3E1", "30.0", "30.", "3.0e1", "300e-1", "1.5e1", "1e10", "1e18",
	"0x1e", "0X1E", "-0x1e", "0o36", "036", "08", "0b11110", "1_000", "1_0.0e1", "-0.0",
	"30.5", ".5", "1e19", "1e21", "1e300", "-1e300", ".inf", "-.inf", ".nan",
	"2147483647", "2147483648", "-2147483648", "-2147483649", "65536",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551616", "99999999999999999999", "9.007199254740993e15", "9.223372036854775e18",
	`"30"`, "'30'", "!!int 30", "!!int '30'", "!!float 30", "!!float '30.0'", "!!str 30", "!!int 3e1",
	"!!int 30.0", "!!binary MzA=", "~", "null", "true", "30s", "1:30", "http", "",
}

// TestNumbersAsTheAPIServer: every number form is taken, or refused, as the API server does,
// with the value it stores.
func TestNumbersAsTheAPIServer(t *testing.T) {
	for _, v := range numberForms {
		numberAgrees(t, v)
	}
}

// FuzzNumber holds the reader's integers against the API's decoding for any spelling.
func FuzzNumber(f *testing.F) {
	for _, v := range numberForms {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.ContainsAny(v, "\n\r#") || strings.HasPrefix(strings.TrimSpace(v), "!") && !strings.HasPrefix(strings.TrimSpace(v), "!!") {
			// A comment or another line changes the document, not the number; "! 30", YAML's
			// non-specific tag, is a string for sigs.k8s.io/yaml and an int for yaml.v3. Not a
			// number to compare, so nothing to check (no skip: nothing was left untested).
			return
		}
		numberAgrees(t, v)
	})
}
