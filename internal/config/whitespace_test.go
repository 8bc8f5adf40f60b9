package config

import (
	"reflect"
	"strings"
	"testing"
)

// valueSamples is a good value of each option whose default is empty, or a better one than its
// default: TestEveryOptionOneRuleForWhitespace needs one for every option, so that an option
// added without one fails it until it has one.
var valueSamples = map[string]string{
	"drain":          "adaptive",
	"drain-ports":    "8080,127.0.0.1:9090",
	"stop-signal":    "QUIT",
	"forward":        "child",
	"rewrite":        "HUP:USR1",
	"exit-map":       "143:0",
	"offline-exec":   `["/bin/true", "deregister"]`,
	"online-exec":    "/bin/true register",
	"post-stop-exec": "true",
	"offline-http":   "http://127.0.0.1:1/down",
	"online-http":    "PUT http://127.0.0.1:1/up",
	"post-stop-http": "http://127.0.0.1:1/gone",
	"ready-probe":    "tcp://127.0.0.1:1",
	"http-addr":      "127.0.0.1:8099",
	"http-token":     "s3cret",
	"log-format":     "console",
}

// One rule for the whitespace around a value, for every option in the option table, as a flag
// and as a variable: removed (a ConfigMap made from a file keeps the file's last newline). Each
// option's sample with whitespace around it makes the configuration the sample alone makes. And
// one rule for the durations: every option whose default is a duration takes a decimal number
// of seconds and refuses a sign or an exponent.
func TestEveryOptionOneRuleForWhitespace(t *testing.T) {
	exported := func(c *Config) Config {
		v := *c
		v.source, v.notes = nil, nil
		return v
	}
	for _, o := range Options() {
		v, ok := valueSamples[o.Flag]
		if !ok {
			v = o.Default
		}
		if v == "" {
			t.Errorf("--%s: no sample value: add one to valueSamples", o.Flag)
			continue
		}
		for _, pad := range []string{v + "\n", " " + v + " ", "\t" + v + "\r\n"} {
			for _, how := range []struct {
				name string
				args func(string) []string
				env  func(string) map[string]string
			}{
				{"--" + o.Flag, func(s string) []string { return []string{"--" + o.Flag, s, "app"} }, func(string) map[string]string { return nil }},
				{o.Env, func(string) []string { return []string{"app"} }, func(s string) map[string]string { return map[string]string{o.Env: s} }},
			} {
				want, err := Parse(how.args(v), how.env(v), nil)
				if err != nil {
					t.Errorf("%s %q: %v", how.name, v, err)
					continue
				}
				got, err := Parse(how.args(pad), how.env(pad), nil)
				if err != nil {
					t.Errorf("%s %q refused where %q is taken: %v", how.name, pad, v, err)
					continue
				}
				if !reflect.DeepEqual(exported(got), exported(want)) {
					t.Errorf("%s %q: configuration\n%+v\nwant, as %q makes it,\n%+v", how.name, pad, exported(got), v, exported(want))
				}
			}
		}
		if _, err := ParseDuration(o.Default); err != nil || o.Default == "" {
			continue
		}
		// A grace period that leaves room for 30.5 s of anything else.
		base := map[string]string{"DRAINIT_GRACE_PERIOD": "1h"}
		if _, err := Parse([]string{"--" + o.Flag, "30.5", "app"}, base, nil); err != nil {
			t.Errorf("--%s 30.5: %v", o.Flag, err)
		}
		for _, bad := range []string{"1e2", "+30s", "+30"} {
			_, err := Parse([]string{"--" + o.Flag, bad, "app"}, base, nil)
			if err == nil || !strings.HasPrefix(err.Error(), "--"+o.Flag+` "`+bad+`": not `) || !strings.Contains(err.Error(), "a duration (use") {
				t.Errorf("--%s %s: %v, want it refused as not a duration", o.Flag, bad, err)
			}
		}
	}
}
