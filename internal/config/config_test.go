package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/signals"
)

func parse(t *testing.T, args []string, env map[string]string) (*Config, error) {
	t.Helper()
	var usage bytes.Buffer
	return Parse(args, env, &usage)
}

func TestDefaults(t *testing.T) {
	c, err := parse(t, []string{"/app", "--port=1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.GracePeriod != 30*time.Second || c.DrainDelay != 5*time.Second || c.KillMargin != 2*time.Second {
		t.Errorf("timing defaults = %v %v %v", c.GracePeriod, c.DrainDelay, c.KillMargin)
	}
	if len(c.Triggers) != 2 || c.Triggers[0] != signals.SIGTERM || c.Triggers[1] != signals.SIGINT {
		t.Errorf("triggers = %v", c.Triggers)
	}
	if c.StopSignal != 0 || c.Forward != ForwardGroup || c.TerminationLog != "/dev/termination-log" {
		t.Errorf("defaults: stop %v forward %v termlog %q", c.StopSignal, c.Forward, c.TerminationLog)
	}
	// Flags end at the command: the app's own flags are its own.
	if strings.Join(c.Command, " ") != "/app --port=1" {
		t.Errorf("command = %q", c.Command)
	}
}

func TestFlagWinsOverEnv(t *testing.T) {
	env := map[string]string{"DRAINIT_GRACE_PERIOD": "45", "DRAINIT_DRAIN_DELAY": "10s", "DRAINIT_STOP_SIGNAL": "QUIT"}
	c, err := parse(t, []string{"--drain-delay", "3s", "--", "app"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.GracePeriod != 45*time.Second || c.DrainDelay != 3*time.Second || c.StopSignal != signals.SIGQUIT {
		t.Errorf("got grace %v drain %v stop %v", c.GracePeriod, c.DrainDelay, c.StopSignal)
	}
}

func TestErrorsNameTheOptionAndValue(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--grace-period", "abc", "app"}, nil, `--grace-period "abc": not a duration`},
		{[]string{"app"}, map[string]string{"DRAINIT_GRACE_PERIOD": "-3"}, `DRAINIT_GRACE_PERIOD "-3"`},
		{[]string{"--stop-signal", "FOO", "app"}, nil, `--stop-signal "FOO": unknown signal "FOO"`},
		{[]string{"--forward", "all", "app"}, nil, `--forward "all": must be group or child`},
		{[]string{"--rewrite", "HUP", "app"}, nil, `--rewrite "HUP"`},
		{[]string{"app"}, map[string]string{"DRAINIT_EXIT_MAP": "143:x"}, `DRAINIT_EXIT_MAP "143:x"`},
		{[]string{"--triggers", "CHLD", "app"}, nil, `--triggers "CHLD": SIGCHLD cannot be a trigger`},
		{[]string{"--stop-signal", "19", "app"}, nil, `--stop-signal "19": SIGSTOP suspends the app rather than stopping it`},
		{[]string{"--stop-signal", "PROF", "app"}, nil, `--stop-signal "PROF": SIGPROF cannot be a trigger, and the stop signal is always one`},
		{[]string{"--stop-signal", "34", "app"}, nil, `--stop-signal "34": `},
		{[]string{"app"}, map[string]string{"DRAINIT_STOP_SIGNAL": "URG"}, `DRAINIT_STOP_SIGNAL "URG": SIGURG cannot be a trigger`},
		{[]string{"app"}, map[string]string{"DRAINIT_REWRITE": "HUP:USR1,TERM:STOP"}, `DRAINIT_REWRITE "HUP:USR1,TERM:STOP": SIGTERM is a trigger, so the app would get SIGSTOP at the stop step`},
		{[]string{"--triggers", "PWR", "--rewrite", "PWR:STOP", "app"}, nil, `--rewrite "PWR:STOP": SIGPWR is a trigger`},
		// Dropping a trigger stops the app no more than SIGSTOP does: the same rule.
		{[]string{"--rewrite", "TERM:0", "app"}, nil, `--rewrite "TERM:0": SIGTERM is a trigger, so the app would get no signal at the stop step (the rewrite drops it)`},
		{[]string{"app"}, map[string]string{"DRAINIT_REWRITE": "HUP:USR1,INT:none"}, `DRAINIT_REWRITE "HUP:USR1,INT:none": SIGINT is a trigger, so the app would get no signal at the stop step`},
		{[]string{"--triggers", "USR1", "--rewrite", "TERM:0", "--http-addr", "127.0.0.1:8099", "app"}, nil, `--rewrite "TERM:0": after a /prestop that no signal follows, the app gets SIGTERM rewritten, so no signal (the rewrite drops it)`},
		{[]string{"--log-level", "loud", "app"}, nil, `--log-level "loud"`},
		{[]string{"--hook-timeout", "0", "app"}, nil, `--hook-timeout "0": must be more than 0`},
		{[]string{"--drain", "adaptive", "--drain-max", "0", "app"}, nil, `--drain-max "0": must be more than 0 with --drain adaptive`},
		{[]string{"app"}, map[string]string{"DRAINIT_DRAIN": "adaptive", "DRAINIT_DRAIN_MAX": "0ms"}, `DRAINIT_DRAIN_MAX "0ms": must be more than 0`},
		{[]string{"--ready-probe", "http://127.0.0.1:1/?x=a b", "app"}, nil, `--ready-probe "http://127.0.0.1:1/?x=a b": ready probe: URL "http://127.0.0.1:1/?x=a b": a space in the URL's query`},
		{[]string{"--http-addr", "8099", "app"}, nil, `--http-addr "8099": listen tcp: address 8099: missing port in address (a port alone is ":8099")`},
		{[]string{"--http-addr", ":http-alt", "app"}, nil, `--http-addr ":http-alt": port "http-alt" is not a number: give the port's number`},
		{[]string{"app"}, map[string]string{"DRAINIT_TRIGGERS": " "}, `DRAINIT_TRIGGERS " ": names no signal`},
		{[]string{"--triggers", ", ,", "app"}, nil, `--triggers ", ,": names no signal`},
		{[]string{"--triggers", "USR1", "--rewrite", "TERM:STOP", "--http-addr", "127.0.0.1:8099", "app"}, nil, `--rewrite "TERM:STOP": after a /prestop that no signal follows, the app gets SIGTERM rewritten, so SIGSTOP`},
		{[]string{"--drain", "adaptive", "--drain-quiet", "0s", "app"}, nil, `--drain-quiet "0s": must be more than 0, or auto`},
		{[]string{"app"}, map[string]string{"DRAINIT_HOOK_TIMEOUT": "0s"}, `DRAINIT_HOOK_TIMEOUT "0s": must be more than 0`},
		{[]string{"--grace-period", "6s", "app"}, nil, `--grace-period "6s": grace period 6s leaves the app no time to stop: it must exceed drain delay 5s + kill margin 2s`},
		{[]string{"--drain-delay", "40s", "app"}, nil, `--drain-delay "40s": grace period 30s leaves`},
		{[]string{"--drain-delay", "1500000h", "--kill-margin", "1500000h", "--grace-period", "30s", "app"}, nil, `grace period 30s leaves the app no time to stop`},
		{[]string{"app"}, map[string]string{"DRAINIT_KILL_MARGIN": "29s"}, `DRAINIT_KILL_MARGIN "29s": grace period 30s leaves`},
		{[]string{"--no-such-flag", "app"}, nil, "unknown option --no-such-flag"},
		{[]string{"-x", "app"}, nil, "unknown option -x (drainit --help lists them)"},
		{nil, nil, "no command given"},
	}
	for _, c := range cases {
		_, err := parse(t, c.args, c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q, %v) error = %v, want it to contain %q", c.args, c.env, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q is more than one line", err)
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("error %v is not a *config.Error", err)
		}
	}
}

// The stop signal is always a trigger, whether it comes from the flag or the environment, so that
// a runtime that stops the container with it (an image's STOPSIGNAL SIGQUIT) starts the drain;
// without --stop-signal, QUIT stays a signal that is forwarded at once (thread dumps).
func TestStopSignalIsATrigger(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want []syscall.Signal
	}{
		{"default", []string{"app"}, nil, []syscall.Signal{signals.SIGTERM, signals.SIGINT}},
		{"flag", []string{"--stop-signal", "QUIT", "app"}, nil, []syscall.Signal{signals.SIGTERM, signals.SIGINT, signals.SIGQUIT}},
		{"env", []string{"app"}, map[string]string{"DRAINIT_STOP_SIGNAL": "SIGQUIT"}, []syscall.Signal{signals.SIGTERM, signals.SIGINT, signals.SIGQUIT}},
		{"already a trigger", []string{"--stop-signal", "TERM", "app"}, nil, []syscall.Signal{signals.SIGTERM, signals.SIGINT}},
		{"with --triggers", []string{"--triggers", "TERM", "--stop-signal", "WINCH", "app"}, nil, []syscall.Signal{signals.SIGTERM, signals.SIGWINCH}},
		{"no other trigger", []string{"--triggers=", "--stop-signal", "QUIT", "app"}, nil, []syscall.Signal{signals.SIGQUIT}},
		{"none at all", []string{"--triggers=", "app"}, nil, nil},
		// drainit never receives KILL: it cannot be one.
		{"uncatchable", []string{"--stop-signal", "KILL", "app"}, nil, []syscall.Signal{signals.SIGTERM, signals.SIGINT}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parse(t, c.args, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.Triggers, c.want) {
				t.Errorf("triggers = %v, want %v", cfg.Triggers, c.want)
			}
		})
	}
}

// --triggers= with no --stop-signal is allowed (only /prestop starts the stop sequence), with a
// warning that says so, and that without a control server nothing does.
func TestNoTriggerWarns(t *testing.T) {
	for args, want := range map[string]string{
		"--triggers=":                                "nothing starts the stop sequence (no --http-addr",
		"--triggers= --http-addr=127.0.0.1:8099":     "only a /prestop request starts the stop sequence",
		"--triggers= --stop-signal=QUIT":             "",
		"--triggers=TERM --http-addr=127.0.0.1:8099": "",
	} {
		wantWarning(t, args, want)
	}
}

// wantWarning parses args (flags, an app after them) and wants the warnings at start to say
// want, or to be none when want is "".
func wantWarning(t *testing.T, args, want string) {
	t.Helper()
	cfg, err := parse(t, append(strings.Fields(args), "app"), nil)
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	warned := strings.Join(cfg.Warnings(), "\n")
	if want == "" && warned != "" || !strings.Contains(warned, want) {
		t.Errorf("%s: warnings %q, want %q", args, warned, want)
	}
}

// Settings that cannot have their effect are said at start: --drain-ports with the fixed drain
// (it applies to the adaptive one), and a quiet period that no drain can hold (not less than
// --drain-max: the drain always runs to its maximum).
func TestDrainSettingsWithoutEffectWarn(t *testing.T) {
	for args, want := range map[string]string{
		"--drain-ports=8080":                                 "--drain-ports has no effect: --drain is fixed",
		"--drain=adaptive --drain-quiet=20s":                 "--drain-quiet 20s is not less than --drain-max 15s",
		"--drain=adaptive --drain-quiet=2s --drain-max=2s":   "--drain-quiet 2s is not less than --drain-max 2s",
		"--drain=adaptive --drain-quiet=1s --drain-max=2s":   "",
		"--drain=adaptive --drain-quiet=auto --drain-max=1s": "",
	} {
		wantWarning(t, args, want)
	}
}

func TestHelpListsEveryOption(t *testing.T) {
	var usage bytes.Buffer
	if _, err := Parse([]string{"--help"}, nil, &usage); !errors.Is(err, ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, o := range Options() {
		for _, s := range []string{"--" + o.Flag, o.Env} {
			if !strings.Contains(usage.String(), s) {
				t.Errorf("--help does not mention %s", s)
			}
		}
	}
}

// --help=false (-h=false) asks for no help: the app runs. The flag package took any -help or -h
// for a request, whatever its value.
func TestHelpFalse(t *testing.T) {
	for _, args := range [][]string{{"--help=false", "app"}, {"-h=false", "app"}, {"--help", "--help=false", "app"}} {
		cfg, err := Parse(args, nil, io.Discard)
		if err != nil || len(cfg.Command) != 1 || cfg.Command[0] != "app" {
			t.Errorf("%q: %v; want the app to run", args, err)
		}
		if v := Validate(args, nil); len(v.Errors) > 0 {
			t.Errorf("Validate(%q): %v; want no mistake", args, v.Errors[0])
		}
	}
	for _, args := range [][]string{{"--help=true", "app"}, {"--help=false", "-h"}} {
		if _, err := Parse(args, nil, io.Discard); !errors.Is(err, ErrHelp) {
			t.Errorf("%q: %v; want the usage", args, err)
		}
	}
	if _, err := Parse([]string{"--help=maybe", "app"}, nil, io.Discard); err == nil || errors.Is(err, ErrHelp) ||
		!strings.Contains(err.Error(), "--help") {
		t.Errorf("--help=maybe: %v; want a mistake naming --help", err)
	}
}

// TestHelpSchemesAccepted: a URL scheme the help offers for an option is one its value may use
// (the help once offered http(s):// for --ready-probe, which refuses https).
func TestHelpSchemesAccepted(t *testing.T) {
	scheme := regexp.MustCompile(`([a-z]+)(\(s\))?://`)
	for _, o := range Options() {
		for _, m := range scheme.FindAllStringSubmatch(o.Help, -1) {
			names := []string{m[1]}
			if m[2] != "" {
				names = append(names, m[1]+"s")
			}
			for _, n := range names {
				value := n + "://127.0.0.1:8080/"
				if n == "tcp" {
					value = "tcp://127.0.0.1:8080"
				}
				env := map[string]string{o.Env: value}
				if _, err := parse(t, []string{"app"}, env); err != nil {
					t.Errorf("--%s's help offers %s://, which it refuses: %v", o.Flag, n, err)
				}
			}
		}
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"30": 30 * time.Second, "0.5": 500 * time.Millisecond, "500ms": 500 * time.Millisecond,
		"1m30s": 90 * time.Second, "0": 0, " 2s ": 2 * time.Second, "30.5": 30500 * time.Millisecond, "\t30s\r\n": 30 * time.Second,
	}
	for in, w := range good {
		if d, err := ParseDuration(in); err != nil || d != w {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, d, err, w)
		}
	}
	// What the error says: a user who wrote 9999999h wrote a duration, too long a one.
	bad := map[string]string{
		"": "empty duration", "abc": "not a duration", "NaN": "not a duration", "5 s": "not a duration",
		"1.2.3s": "not a duration", "+-1s": "not a duration", "1h2": "not a duration",
		"-1": "not a duration from 0 up", "-1s": "not a duration from 0 up", "-9999999h": "not a duration from 0 up",
		"9999999h": "too long", "9223372037": "too long",
		"2562047h47m17s": "too long", "1h9999999999999999999ns": "too long",
		// Not 0, which means none where a duration may be 0.
		"0.0000000001": "shorter than a nanosecond", "0.5ns": "shorter than a nanosecond",
		// What strconv.ParseFloat reads besides decimals, and no spec means; a sign.
		"0x1p5": "not a duration", "1_0": "not a duration", "1e2": "not a duration", "1e300": "not a duration",
		"1e-10": "not a duration", "Inf": "not a duration", "-Inf": "not a duration", "+30s": "not a duration",
		"+30": "not a duration", "+0": "not a duration", ".": "not a duration",
	}
	for in, want := range bad {
		d, err := ParseDuration(in)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want an error %q", in, d, err, want)
		}
	}
	if d, err := ParseDuration("2562047h47m16s"); err != nil || d != 2562047*time.Hour+47*time.Minute+16*time.Second {
		t.Errorf("the longest duration in whole seconds: %v, %v", d, err)
	}
}

func TestDurationSyntax(t *testing.T) {
	for in, want := range map[string]bool{
		"1s": true, "-1.5h": true, "+2m3s": true, "1.s": true, ".5ms": true, "3µs": true, "4us": true,
		"": false, "-": false, "s": false, "1": false, "1x": false, "1..2s": false, ".s": false,
		"1s2": false, "--1s": false, "1 s": false, "1hs": false,
	} {
		if got := durationSyntax(in); got != want {
			t.Errorf("durationSyntax(%q) = %v, want %v", in, got, want)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		// Out of range only what is a duration or a number: the rest cannot be read at all.
		if outOfRange(err) && !durationSyntax(strings.TrimSpace(s)) {
			if _, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64); ferr != nil {
				t.Fatalf("ParseDuration(%q): %v, but it is neither a duration nor a number", s, err)
			}
		}
	})
}

func TestHookOptionsAndWarnings(t *testing.T) {
	env := map[string]string{"DRAINIT_OFFLINE_EXEC": `["/bin/deregister"]`, "DRAINIT_GRACE_PERIOD": "15s"}
	c, err := parse(t, []string{"--post-stop-http", "http://127.0.0.1:1/x", "--hook-timeout", "10s", "app"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Hooks[HookSpec{StageOffline, HookExec}]; got.Spec != `["/bin/deregister"]` || !slices.Equal(got.Argv, []string{"/bin/deregister"}) {
		t.Errorf("offline exec = %+v", got)
	}
	if c.OptionName("offline-exec") != "DRAINIT_OFFLINE_EXEC" || c.OptionName("post-stop-http") != "--post-stop-http" {
		t.Errorf("option names: %q %q", c.OptionName("offline-exec"), c.OptionName("post-stop-http"))
	}
	w := strings.Join(c.Warnings(), "\n")
	// The stop signal comes by 15s - 2s - 2s = 11s; 10s of hooks and 5s of drain go past it.
	if !strings.Contains(w, "= 15s, past the latest stop signal at 11s") {
		t.Errorf("warnings %q do not spell out the offline budget", w)
	}
	// 15s - 5s - 500ms leaves a post-stop hook 9.5s at most.
	if !strings.Contains(w, "post-stop hook timeout 10s exceeds what a stop can leave it (grace 15s - drain 5s - 500ms for drainit's exit = 9.5s)") {
		t.Errorf("warnings %q do not flag the post-stop timeout", w)
	}
	// The warnings follow the supervisor's budget (Budget), not a sum of their own.
	// Before, the offline one left out the 2s kept for the app to stop (12s + 5s + 2s < 20s, yet
	// the stop signal is due at 16s, and the drain was cut by 1s with no warning), and the
	// post-stop one took the kill margin for time the hooks do not get (they run to 500ms
	// before the deadline): it warned of 9s in 15s - 5s, and not of 9.8s with a 200ms margin.
	for _, tc := range []struct{ args, want string }{
		{"--offline-exec /bin/a --grace-period 20s --hook-timeout 12s", "offline hooks (1 × hook timeout 12s) + drain 5s = 17s, past the latest stop signal at 16s"},
		{"--offline-exec /bin/a --grace-period 20s --hook-timeout 11s", ""},
		{"--post-stop-exec /bin/a --grace-period 15s --kill-margin 200ms --hook-timeout 9.8s", "post-stop hook timeout 9.8s exceeds"},
		{"--post-stop-exec /bin/a --grace-period 15s --hook-timeout 9s", ""},
	} {
		wantWarning(t, tc.args, tc.want)
	}
	c, _ = parse(t, []string{"app"}, nil)
	if ws := c.Warnings(); len(ws) != 0 {
		t.Errorf("defaults warn: %q", ws)
	}
	// Sums past the largest Duration do not wrap to a small one: two offline hooks of 2000000h
	// each are still more than a 2500000h grace period.
	c, err = parse(t, []string{"--offline-exec", "/bin/a", "--offline-http", "http://127.0.0.1:1/x",
		"--hook-timeout", "2000000h", "--grace-period", "2500000h", "app"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w = strings.Join(c.Warnings(), "\n")
	if !strings.Contains(w, "slow hooks will cut the drain short") {
		t.Errorf("warnings %q: want the offline budget flagged", w)
	}
}

// An option of the adaptive drain is named at start as having no effect on a fixed one:
// DRAINIT_DRAIN_QUIET=auto without --drain adaptive would otherwise leave a fixed drain that
// nothing points out.
func TestOtherDrainsOptionsNoted(t *testing.T) {
	c, err := parse(t, []string{"--drain-max", "20s", "app"}, map[string]string{"DRAINIT_DRAIN_QUIET": "auto"})
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{
		"DRAINIT_DRAIN_QUIET has no effect: --drain is fixed, and it applies to --drain adaptive only",
		"--drain-max has no effect: --drain is fixed",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q, want %q", w, want)
		}
	}
	c, err = parse(t, []string{"--drain", "adaptive", "--drain-delay", "3s", "--drain-quiet", "auto", "app"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// --drain-delay is the adaptive drain's fallback (the app's connections cannot be watched):
	// it has an effect, and a warning that it has none would mislead.
	if ws := c.Warnings(); len(ws) != 0 {
		t.Errorf("warnings %q, want none: --drain-delay is the adaptive drain's fallback", ws)
	}
}

// A server whose graceful stop is not SIGTERM (nginx's SIGQUIT, httpd's SIGWINCH, haproxy's
// SIGUSR1), run with no --stop-signal: the log says at start that its images' STOPSIGNAL would be
// forwarded with no drain, and what to set. Nothing when the signal is a trigger or a stop signal
// is chosen, or for an app that is not one of them.
func TestGracefulStopNoted(t *testing.T) {
	for _, c := range []struct {
		args  []string
		env   map[string]string
		want  []string // in the one warning; nil: no warning
		avoid string
	}{
		{[]string{"/docker-entrypoint.sh", "nginx", "-g", "daemon off;"}, nil,
			[]string{"looks like nginx (nginx)", "gracefully on SIGQUIT", "forwarded at once, with no drain",
				"after a SIGTERM's drain nginx gets SIGTERM", "--stop-signal QUIT (DRAINIT_STOP_SIGNAL=QUIT)"}, ""},
		{[]string{"httpd-foreground"}, nil, []string{"looks like Apache httpd (httpd-foreground)", "SIGWINCH", "--stop-signal WINCH"}, ""},
		{[]string{"haproxy", "-f", "/etc/haproxy/haproxy.cfg"}, nil, []string{"looks like haproxy", "SIGUSR1",
			"--stop-signal USR1 (DRAINIT_STOP_SIGNAL=USR1) and --forward child"}, ""},
		{[]string{"--forward", "child", "haproxy"}, nil, []string{"--stop-signal USR1"}, "--forward child"},
		{[]string{"nginx"}, nil, []string{"--stop-signal QUIT (DRAINIT_STOP_SIGNAL=QUIT) and --forward child (nginx's master"}, ""},
		{[]string{"--forward", "child", "nginx"}, nil, []string{"--stop-signal QUIT"}, "--forward child"},
		{[]string{"php-fpm", "-F"}, nil, []string{"--stop-signal QUIT", "and --forward child (php-fpm's master"}, ""},
		{[]string{"httpd-foreground"}, nil, []string{"--stop-signal WINCH", "and --forward child (httpd's parent"}, ""},
		// SIGTERM rewritten to the graceful signal: only the STOPSIGNAL half is left to say.
		{[]string{"--rewrite", "TERM:QUIT", "nginx"}, nil, []string{"forwarded at once"}, "after a SIGTERM's drain"},
		// No SIGTERM trigger: nothing to say about what follows one.
		{[]string{"--triggers", "INT", "nginx"}, nil, []string{"forwarded at once"}, "after a SIGTERM's drain"},
		// A control character in the program's path stays on the line, escaped.
		{[]string{"/usr/sbin\r\n/nginx"}, nil, []string{`looks like nginx (/usr/sbin\r\n/nginx)`}, ""},
		{[]string{"--stop-signal", "QUIT", "nginx"}, nil, nil, ""},
		{[]string{"nginx"}, map[string]string{"DRAINIT_STOP_SIGNAL": "TERM"}, nil, ""},
		{[]string{"--triggers", "TERM,QUIT", "nginx"}, nil, nil, ""},
		{[]string{"/app", "nginx"}, nil, nil, ""},
		// haproxy with its stop signal chosen, but signalled as a group: its workers would get every
		// signal twice, from drainit and from their master.
		{[]string{"--stop-signal", "USR1", "haproxy", "-W", "-db"}, nil, []string{"looks like haproxy (haproxy)",
			"gets every signal drainit forwards twice", "--forward child (DRAINIT_FORWARD=child)"}, "forwarded at once"},
		{[]string{"--triggers", "TERM,USR1", "/docker-entrypoint.sh", "haproxy"}, nil, []string{"--forward child"}, ""},
		{[]string{"--stop-signal", "USR1", "--forward", "child", "haproxy"}, nil, nil, ""},
		{[]string{"--stop-signal", "USR1", "haproxy"}, map[string]string{"DRAINIT_FORWARD": "child"}, nil, ""},
		{[]string{"--stop-signal", "QUIT", "--forward", "group", "nginx"}, nil, nil, ""},
	} {
		cfg, err := parse(t, c.args, c.env)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		ws := cfg.Warnings()
		if c.want == nil {
			if len(ws) != 0 {
				t.Errorf("%q %v: warnings %q, want none", c.args, c.env, ws)
			}
			continue
		}
		if len(ws) != 1 {
			t.Errorf("%q: warnings %q, want one", c.args, ws)
			continue
		}
		for _, s := range c.want {
			if !strings.Contains(ws[0], s) {
				t.Errorf("%q: warning lacks %q: %s", c.args, s, ws[0])
			}
		}
		if c.avoid != "" && strings.Contains(ws[0], c.avoid) {
			t.Errorf("%q: warning says %q: %s", c.args, c.avoid, ws[0])
		}
		if strings.ContainsAny(ws[0], "\r\n") {
			t.Errorf("%q: warning is more than one line: %q", c.args, ws[0])
		}
	}
}

func TestEmptyTerminationLogTurnsItOff(t *testing.T) {
	c, err := parse(t, []string{"app"}, map[string]string{"DRAINIT_TERMINATION_LOG": ""})
	if err != nil {
		t.Fatal(err)
	}
	if c.TerminationLog != "" {
		t.Errorf("DRAINIT_TERMINATION_LOG= gave %q, want it off", c.TerminationLog)
	}
	c, _ = parse(t, []string{"--termination-log=", "app"}, nil)
	if c.TerminationLog != "" {
		t.Errorf("--termination-log= gave %q, want it off", c.TerminationLog)
	}
}

// --drain-quiet auto (issue 16): a quiet period that follows the traffic, from the flag or the
// environment; a value that is neither auto nor a duration is refused in one line that names
// the option, the value and what it takes.
func TestDrainQuietAuto(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--drain", "adaptive", "--drain-quiet", "auto", "app"}, nil},
		{[]string{"--drain", "adaptive", "app"}, map[string]string{"DRAINIT_DRAIN_QUIET": " auto "}},
	} {
		c, err := parse(t, tc.args, tc.env)
		if err != nil {
			t.Fatalf("Parse(%q, %v): %v", tc.args, tc.env, err)
		}
		if !c.DrainQuietAuto || c.DrainQuiet != 0 || !c.Adaptive {
			t.Errorf("Parse(%q, %v): auto %v, quiet %s, want auto", tc.args, tc.env, c.DrainQuietAuto, c.DrainQuiet)
		}
	}
	c, err := parse(t, []string{"--drain", "adaptive", "--drain-quiet", "1.5", "app"}, nil)
	if err != nil || c.DrainQuietAuto || c.DrainQuiet != 1500*time.Millisecond {
		t.Errorf("--drain-quiet 1.5: %v, auto %v, quiet %s, want a 1.5s fixed quiet period", err, c != nil && c.DrainQuietAuto, c.DrainQuiet)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--drain-quiet", "automatic", "app"}, nil, `--drain-quiet "automatic": not auto or a duration (use auto, 1s, 500ms or a number of seconds)`},
		{[]string{"--drain-quiet", "AUTO", "app"}, nil, `--drain-quiet "AUTO": not auto or a duration`},
		{[]string{"app"}, map[string]string{"DRAINIT_DRAIN_QUIET": "-1s"}, `DRAINIT_DRAIN_QUIET "-1s": not a duration from 0 up`},
	} {
		_, err := parse(t, tc.args, tc.env)
		var ce *Error
		if err == nil || err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !errors.As(err, &ce) || ce.Flag != "drain-quiet" {
			t.Errorf("Parse(%q, %v) = %v, want the one-line *Error %q", tc.args, tc.env, err, tc.want)
		}
	}
	var usage bytes.Buffer
	WriteUsage(&usage)
	if !strings.Contains(usage.String(), "auto: for a silence that follows the traffic") {
		t.Errorf("--help does not say --drain-quiet takes auto:\n%s", usage.String())
	}
	if !strings.Contains(usage.String(), "drainit sets "+SupervisorEnv+" in the app's environment") {
		t.Errorf("--help does not name the variable drainit sets for its app:\n%s", usage.String())
	}
}

func TestAdaptiveDrain(t *testing.T) {
	c, err := parse(t, []string{"--drain", "adaptive", "--drain-ports", "8080,127.0.0.1:9090", "app"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Adaptive || c.DrainQuiet != time.Second || c.DrainMin != 0 || c.DrainMax != 15*time.Second || len(c.DrainPorts) != 2 {
		t.Errorf("adaptive defaults: %+v", c)
	}
	if d := c.Budget().Drain; d != 15*time.Second {
		t.Errorf("Budget().Drain = %v, want the maximum", d)
	}
	// The budget check uses the maximum when adaptive, and names it.
	_, err = parse(t, []string{"--drain", "adaptive", "--drain-max", "29s", "app"}, nil)
	if err == nil || !strings.Contains(err.Error(), `--drain-max "29s": grace period 30s leaves the app no time to stop: it must exceed drain max 29s`) {
		t.Errorf("drain max over budget: %v", err)
	}
	// A fixed drain ignores the adaptive settings' budget.
	if _, err := parse(t, []string{"--drain-max", "60s", "app"}, nil); err != nil {
		t.Errorf("fixed drain with a large --drain-max: %v", err)
	}
	for _, bad := range [][]string{
		{"--drain", "smart", "app"}, {"--drain-ports", "80,x", "app"},
		{"--drain", "adaptive", "--drain-min", "10s", "--drain-max", "5s", "app"},
	} {
		if _, err := parse(t, bad, nil); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) = %v, want a one-line error", bad, err)
		}
	}
}

// TestStopToSIGSTOPOnlyAtTheStopStep: SIGSTOP is refused only where the app would get it to stop;
// rewriting a job-control signal to it (an app that ignores TSTP) is an ordinary choice.
// TestStopToSIGSTOPOnlyAtTheStopStep: a rewrite to SIGSTOP, or a drop, is refused only where the
// stop step would send it.
func TestStopToSIGSTOPOnlyAtTheStopStep(t *testing.T) {
	for _, args := range [][]string{
		{"--rewrite", "TSTP:STOP", "app"},
		{"--stop-signal", "TERM", "--rewrite", "TERM:STOP", "app"}, // the stop step sends TERM as given
		{"--stop-signal", "KILL", "app"},
		{"--rewrite", "TSTP:0", "app"},                          // not a trigger: dropped when forwarded
		{"--stop-signal", "TERM", "--rewrite", "TERM:0", "app"}, // the stop step sends TERM as given
	} {
		if _, err := Parse(args, nil, nil); err != nil {
			t.Errorf("Parse(%q): %v", args, err)
		}
	}
}

// FuzzParse: the whole of drainit's configuration, flags and DRAINIT_* variables, never panics
// on any input; a refusal is one line (the rule for every error drainit prints at start), and an
// accepted configuration has a command and a grace period. args and env hold NUL-separated
// words and KEY=VALUE pairs.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, args, env string) {
		environ := map[string]string{}
		for kv := range strings.SplitSeq(env, "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				environ[k] = v
			}
		}
		c, err := Parse(strings.Split(args, "\x00"), environ, io.Discard)
		switch {
		case err != nil:
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("a refusal of more than one line: %q", err)
			}
		case len(c.Command) == 0 || c.GracePeriod <= 0:
			t.Fatalf("accepted with command %q, grace period %v", c.Command, c.GracePeriod)
		}
	})
}

// --drain-watch: connections (the default) or requests, from the flag or the environment; any
// other value is one line naming the option and what it takes; with a fixed drain it is noted
// as having no effect.
func TestDrainWatch(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		env      map[string]string
		requests bool
	}{
		{[]string{"--drain", "adaptive", "app"}, nil, false},
		{[]string{"--drain", "adaptive", "--drain-watch", "connections", "app"}, nil, false},
		{[]string{"--drain", "adaptive", "--drain-watch=requests", "app"}, nil, true},
		{[]string{"--drain", "adaptive", "app"}, map[string]string{"DRAINIT_DRAIN_WATCH": " requests "}, true},
		{[]string{"--drain", "adaptive", "--drain-watch", "connections", "app"}, map[string]string{"DRAINIT_DRAIN_WATCH": "requests"}, false},
	} {
		c, err := parse(t, tc.args, tc.env)
		if err != nil || c.DrainRequests != tc.requests {
			t.Errorf("Parse(%q, %v): %v, requests %v; want %v", tc.args, tc.env, err, c != nil && c.DrainRequests, tc.requests)
		}
	}
	for _, v := range []string{"request", "Requests", "", "bytes"} {
		_, err := parse(t, []string{"--drain", "adaptive", "--drain-watch", v, "app"}, nil)
		var ce *Error
		want := fmt.Sprintf("--drain-watch %q: must be connections or requests", v)
		if err == nil || err.Error() != want || !errors.As(err, &ce) || ce.Flag != "drain-watch" {
			t.Errorf("--drain-watch %q: %v, want the one-line *Error %q", v, err, want)
		}
	}
	c, err := parse(t, []string{"--drain-watch", "requests", "app"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ws := c.Warnings(); len(ws) != 1 || !strings.Contains(ws[0], "--drain-watch has no effect") {
		t.Errorf("--drain-watch with a fixed drain: warnings %q, want that it has no effect", ws)
	}
}

// A control server that listens beyond loopback with no token is named at start: any client
// that reaches the pod's port could stop the app. Not on loopback, not with a token.
func TestOpenControlServerNoted(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string // in the one warning; "": no warning
	}{
		{[]string{"--http-addr", ":8099", "app"}, nil, `the control server (--http-addr ":8099") needs no token and listens beyond loopback`},
		{[]string{"app"}, map[string]string{"DRAINIT_HTTP_ADDR": "0.0.0.0:8099"}, `(DRAINIT_HTTP_ADDR "0.0.0.0:8099")`},
		{[]string{"--http-addr", "[::]:8099", "app"}, nil, "listen on 127.0.0.1:8099"},
		{[]string{"--http-addr", "10.1.2.3:8099", "app"}, nil, "anyone who reaches the pod's port 8099"},
		{[]string{"--http-addr", "127.0.0.1:8099", "app"}, nil, ""},
		{[]string{"--http-addr", "[::1]:8099", "app"}, nil, ""},
		{[]string{"--http-addr", "localhost:8099", "app"}, nil, ""},
		{[]string{"--http-addr", ":8099", "app"}, map[string]string{"DRAINIT_HTTP_TOKEN": "s3cret"}, ""},
		{[]string{"app"}, nil, ""},
	} {
		cfg, err := parse(t, c.args, c.env)
		if err != nil {
			t.Fatalf("%q %v: %v", c.args, c.env, err)
		}
		ws := cfg.Warnings()
		switch {
		case c.want == "" && len(ws) != 0:
			t.Errorf("%q %v: warnings %q, want none", c.args, c.env, ws)
		case c.want != "" && (len(ws) != 1 || !strings.Contains(ws[0], c.want)):
			t.Errorf("%q %v: warnings %q, want one with %q", c.args, c.env, ws, c.want)
		}
	}
}

// The log level is taken in any case, and "warning" as warn, as the stop signal's name is: a
// DRAINIT_LOG_LEVEL=DEBUG from another tool's habits starts drainit rather than refusing it.
// --kill-margin 0 is accepted, with a warning at start naming the option: drainit's SIGKILL then
// races the runtime's.
func TestKillMarginZeroWarns(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string // the option as named in the warning; "": no warning about it
	}{
		{[]string{"--kill-margin", "0", "app"}, nil, "--kill-margin 0:"},
		{[]string{"app"}, map[string]string{"DRAINIT_KILL_MARGIN": "0s"}, "DRAINIT_KILL_MARGIN 0:"},
		{[]string{"--kill-margin", "1ms", "app"}, nil, ""},
		{[]string{"app"}, nil, ""},
	} {
		cfg, err := parse(t, c.args, c.env)
		if err != nil {
			t.Fatalf("%q %v: %v", c.args, c.env, err)
		}
		var got []string
		for _, w := range cfg.Warnings() {
			if strings.Contains(w, "drainit's SIGKILL comes at the deadline") {
				got = append(got, w)
			}
		}
		if c.want == "" && len(got) > 0 || c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want)) {
			t.Errorf("%q %v: warnings %q, want one starting %q", c.args, c.env, got, c.want)
		}
	}
}

func TestLogLevelSpellings(t *testing.T) {
	for in, want := range map[string]string{"DEBUG": "debug", "Info": "info", "warn": "warn", "warning": "warn", "WARNING": "warn", " error ": "error"} {
		c, err := parse(t, []string{"app"}, map[string]string{"DRAINIT_LOG_LEVEL": in})
		if err != nil {
			t.Errorf("DRAINIT_LOG_LEVEL=%q: %v", in, err)
			continue
		}
		if c.LogLevel != want {
			t.Errorf("DRAINIT_LOG_LEVEL=%q: level %q, want %q", in, c.LogLevel, want)
		}
	}
}

// SubcommandNear offers a subcommand for a slip of one or two edits, and none for a word that is
// merely short or another app's name.
func TestSubcommandNear(t *testing.T) {
	for in, want := range map[string]string{"chekc": "check", "chek": "check", "versoin": "version", "--verison": "--version",
		"sleeep": "sleep", "prestp": "prestop", "sh": "", "nginx": "", "java": "", "/app/server": "", "": ""} {
		if got := SubcommandNear(in); got != want {
			t.Errorf("SubcommandNear(%q) = %q, want %q", in, got, want)
		}
	}
}

// An empty DRAINIT_* variable is taken as unset, its option at its default, and the log says
// so: the same option's flag given empty means another thing (--triggers= is no trigger), and
// a template that rendered nothing should not pass unnoticed. The flag given beside it wins.
func TestEmptyVariableIsUnsetAndSaid(t *testing.T) {
	c, err := parse(t, []string{"app"}, map[string]string{"DRAINIT_TRIGGERS": "", "DRAINIT_GRACE_PERIOD": "", "DRAINIT_HTTP_ADDR": ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Triggers) != 2 || c.GracePeriod != 30*time.Second {
		t.Errorf("triggers %v, grace %s: want the defaults", c.Triggers, c.GracePeriod)
	}
	w := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{`DRAINIT_TRIGGERS is empty: taken as unset, the default "TERM,INT"`, `DRAINIT_GRACE_PERIOD is empty: taken as unset, the default "30s"`} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q, want %q", w, want)
		}
	}
	if strings.Contains(w, "DRAINIT_HTTP_ADDR") {
		t.Errorf("warnings %q: an empty variable whose default is empty is no surprise", w)
	}
	c, err = parse(t, []string{"--triggers", "TERM", "app"}, map[string]string{"DRAINIT_TRIGGERS": ""})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); strings.Contains(w, "is empty") {
		t.Errorf("warnings %q: the flag was given, the variable is only shadowed", w)
	}
}
