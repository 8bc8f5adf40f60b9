package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/drainit/drainit/signals"
)

// TestRepeatedListsAddUp: a list option given twice keeps both lists, as dumb-init users write
// -r 15:2 -r 2:15; nothing given is silently dropped.
func TestRepeatedListsAddUp(t *testing.T) {
	c, err := parse(t, []string{
		"--rewrite", "TERM:INT", "--rewrite=QUIT:USR1,HUP:0",
		"--exit-map", "143:0", "--exit-map", "130:0",
		"--triggers", "TERM", "--triggers", "USR2",
		"--drain", "adaptive", "--drain-ports", "8080", "--drain-ports", "127.0.0.1:9090",
		"app"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (signals.Rewrite{signals.SIGTERM: signals.SIGINT, signals.SIGQUIT: signals.SIGUSR1, signals.SIGHUP: 0}); !maps.Equal(c.Rewrite, want) {
		t.Errorf("rewrite = %v, want %v", c.Rewrite, want)
	}
	if want := (signals.ExitMap{143: 0, 130: 0}); !maps.Equal(c.ExitMap, want) {
		t.Errorf("exit map = %v, want %v", c.ExitMap, want)
	}
	if want := []syscall.Signal{signals.SIGTERM, signals.SIGUSR2}; !slices.Equal(c.Triggers, want) {
		t.Errorf("triggers = %v, want %v", c.Triggers, want)
	}
	want, _ := ParseEndpoints("8080,127.0.0.1:9090")
	if !slices.Equal(c.DrainPorts, want) {
		t.Errorf("drain ports = %v, want %v", c.DrainPorts, want)
	}
	// Adding up is not a warning: it is what was asked.
	if ws := c.Warnings(); len(ws) != 0 {
		t.Errorf("warnings %q", ws)
	}
	// An empty one adds nothing; alone, it still means none.
	c, err = parse(t, []string{"--triggers=", "--triggers", "QUIT", "app"}, nil)
	if err != nil || !slices.Equal(c.Triggers, []syscall.Signal{signals.SIGQUIT}) {
		t.Errorf("--triggers= --triggers QUIT: %v, %v", c, err)
	}
	// A conflict between the lists is refused as one within a list is: never half-applied.
	for args, msg := range map[[5]string]string{
		{"--rewrite", "HUP:USR1", "--rewrite", "HUP:USR2", "app"}:  `--rewrite "HUP:USR1,HUP:USR2": entry "HUP:USR2": SIGHUP rewritten twice`,
		{"--exit-map", "143:0", "--exit-map", "143:1", "app"}:      `--exit-map "143:0,143:1": entry "143:1": exit code 143 mapped twice`,
		{"--triggers", "TERM", "--triggers", "CHLD", "app"}:        `--triggers "TERM,CHLD": SIGCHLD cannot be a trigger`,
		{"--drain-ports", "8080", "--drain-ports", "x:y:z", "app"}: `--drain-ports "8080,x:y:z"`,
	} {
		_, err := parse(t, args[:], nil)
		if err == nil || !strings.HasPrefix(err.Error(), msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) = %v, want one line starting %q", args, err, msg)
		}
	}
}

// TestRepeatedHookRefused: a hook option holds one command or call; given twice, drainit does
// not start (exit 2) rather than run one of them.
func TestRepeatedHookRefused(t *testing.T) {
	for _, spec := range hookSpecs {
		val := "/bin/true"
		if spec.Kind == HookHTTP {
			val = "http://127.0.0.1:1/x"
		}
		args := []string{"--" + spec.Flag(), val, "--" + spec.Flag(), val, "app"}
		_, err := parse(t, args, nil)
		want := "--" + spec.Flag() + ` "` + val + `": given 2 times, but a hook option holds one command or call`
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", args, err, want)
		}
	}
	// drainit check sees the same, naming the option, even when a value is not shown.
	v := Validate([]string{"--offline-exec", "/bin/a", "--offline-exec", Unseen, "app"}, nil)
	if len(v.Errors) != 1 || v.Errors[0].Flag != "offline-exec" || !v.Settings["offline-exec"].Bad {
		t.Errorf("Validate: %v", v.Errors)
	}
}

// TestDroppedValuesAreWarned: what the flag replaced and what a flag given twice replaced are in
// Warnings, which drainit logs at start; the token's value never is.
func TestDroppedValuesAreWarned(t *testing.T) {
	env := map[string]string{"DRAINIT_REWRITE": "HUP:USR1", "DRAINIT_HTTP_TOKEN": "envsecret", "DRAINIT_LOG_LEVEL": "debug"}
	c, err := parse(t, []string{"--rewrite", "TERM:INT", "--grace-period", "40s", "--grace-period=50s",
		"--http-token", "flagsecret1", "--http-token", "flagsecret2", "app"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.GracePeriod.String() != "50s" || c.HTTPToken != "flagsecret2" || c.LogLevel != "debug" {
		t.Errorf("grace %v, token %q, log level %q: want the last flag, the flag, the variable", c.GracePeriod, c.HTTPToken, c.LogLevel)
	}
	if want := (signals.Rewrite{signals.SIGTERM: signals.SIGINT}); !maps.Equal(c.Rewrite, want) {
		t.Errorf("rewrite = %v: the flag and the variable do not add up, the flag wins", c.Rewrite)
	}
	ws := c.Warnings()
	for _, want := range []string{
		`--rewrite given, DRAINIT_REWRITE="HUP:USR1" ignored`,
		`--grace-period given 2 times: the last, "50s", is used; "40s" ignored`,
		`--http-token given, DRAINIT_HTTP_TOKEN ignored`,
		`--http-token given 2 times: the last one is used`,
	} {
		if !slices.Contains(ws, want) {
			t.Errorf("warnings %q lack %q", ws, want)
		}
	}
	if len(ws) != 4 {
		t.Errorf("warnings %q: want exactly the four dropped values", ws)
	}
	if all := strings.Join(ws, "\n"); strings.Contains(all, "secret") {
		t.Errorf("warnings show a token: %q", all)
	}
}

// TestToken: a token with a file's last newline is trimmed, with a warning, so that the token
// clients send matches; one that no HTTP client can send is refused, without printing it.
func TestToken(t *testing.T) {
	for _, raw := range []string{"s3cret\n", "s3cret\r\n", " s3cret\t"} {
		c, err := parse(t, []string{"app"}, map[string]string{"DRAINIT_HTTP_TOKEN": raw})
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if c.HTTPToken != "s3cret" {
			t.Errorf("%q: token %q, want s3cret", raw, c.HTTPToken)
		}
		if ws := c.Warnings(); len(ws) != 1 || !strings.HasPrefix(ws[0], "DRAINIT_HTTP_TOKEN: the whitespace around the token is not part of it") {
			t.Errorf("%q: warnings %q", raw, ws)
		}
	}
	c, err := parse(t, []string{"--http-token", "s3cret", "app"}, nil)
	if err != nil || c.HTTPToken != "s3cret" || len(c.Warnings()) != 0 {
		t.Errorf("a clean token: %v, %v, %q", c, err, c.Warnings())
	}
	longest := strings.Repeat("t", MaxTokenBytes)
	if c, err := parse(t, []string{"--http-token", longest + "\n", "app"}, nil); err != nil || c.HTTPToken != longest {
		t.Errorf("a token of %d bytes and a newline: %v", MaxTokenBytes, err)
	}
	for raw, want := range map[string]string{
		"\n":             "the token is only whitespace",
		"s3 cret":        "whitespace inside the token (byte 3 of 7)",
		"s3\tcret":       "whitespace inside the token",
		"s3cret\nX-A: b": "control character 0x0a inside the token (byte 7 of 13)",
		"s3\x00cret":     "control character 0x00",
		"s3\x7fcret":     "control character 0x7f",
		"s3cret" + strings.Repeat("x", MaxTokenBytes-5): fmt.Sprintf("the token is %d bytes, over %d", MaxTokenBytes+1, MaxTokenBytes),
	} {
		_, err := parse(t, []string{"--http-token", raw, "app"}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "--http-token: "+want) {
			t.Errorf("--http-token %q: %v, want %q", raw, err, want)
			continue
		}
		if strings.Contains(err.Error(), "cret") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--http-token %q: error %q shows the token or is more than one line", raw, err)
		}
	}
	// A mistyped option ("---", as a hand may add a dash) is refused without what follows "=".
	for _, args := range [][]string{{"---http-token=s3cret", "app"}, {"---offline-http={\"url\":\"http://u:s3cret@h/\"}", "app"}} {
		_, err := parse(t, args, nil)
		if err == nil || strings.Contains(err.Error(), "cret") || !strings.Contains(err.Error(), "bad flag syntax: ---") {
			t.Errorf("%q: %v, want bad flag syntax without the value", args[0], err)
		}
	}
	// Unseen (from a Secret): nothing to say about it.
	if v := Validate([]string{"app"}, map[string]string{"DRAINIT_HTTP_TOKEN": Unseen}); len(v.Errors) != 0 {
		t.Errorf("unseen token: %v", v.Errors)
	}
}
