package config

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOptionsAreRawsTags: Options is Raw's tags, one entry per field, with unique names.
func TestOptionsAreRawsTags(t *testing.T) {
	typ := reflect.TypeFor[Raw]()
	opts := Options()
	if len(opts) != typ.NumField() {
		t.Fatalf("%d options for %d fields", len(opts), typ.NumField())
	}
	flags, envs := map[string]bool{}, map[string]bool{}
	for i, o := range opts {
		f := typ.Field(i)
		if o.Field != f.Name || o.Flag != f.Tag.Get("flag") || o.Env != EnvPrefix+f.Tag.Get("env") ||
			o.Default != f.Tag.Get("envDefault") || o.Help != f.Tag.Get("help") {
			t.Errorf("option %d is %+v, field %s has tags %q", i, o, f.Name, f.Tag)
		}
		if o.Flag == "" || flags[o.Flag] || envs[o.Env] {
			t.Errorf("option %+v: empty or repeated name", o)
		}
		flags[o.Flag], envs[o.Env] = true, true
	}
}

// TestHookStages: the stages and kinds spell the hook options' names, and every hook option
// drainit declares is one stage and kind.
func TestHookStages(t *testing.T) {
	for s, want := range map[HookStage]string{StageOffline: "offline", StageOnline: "online", StagePostStop: "post-stop"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s, want)
		}
	}
	var hookFlags []string
	for _, o := range Options() {
		if strings.HasSuffix(o.Flag, "-exec") || strings.HasSuffix(o.Flag, "-http") {
			hookFlags = append(hookFlags, o.Flag)
		}
	}
	var specFlags []string
	for _, spec := range hookSpecs {
		specFlags = append(specFlags, spec.Flag())
	}
	slices.Sort(hookFlags)
	slices.Sort(specFlags)
	if !slices.Equal(hookFlags, specFlags) || len(specFlags) != 6 {
		t.Errorf("hook options %q, hook specs %q", hookFlags, specFlags)
	}
	c, err := Parse([]string{"--online-http=http://127.0.0.1:1/up", "--post-stop-exec=/bin/true", "app"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	online, post := c.Hooks[HookSpec{StageOnline, HookHTTP}], c.Hooks[HookSpec{StagePostStop, HookExec}]
	if online.Spec != "http://127.0.0.1:1/up" || online.Call.Method != "GET" || online.Call.URL.String() != online.Spec ||
		post.Spec != "/bin/true" || !slices.Equal(post.Argv, []string{"/bin/true"}) || len(c.Hooks) != 2 {
		t.Errorf("hooks: %+v", c.Hooks)
	}
}

// TestHooksProbeAndAddressRefusedAtParse: the values the run hands to the hooks package and to
// net.Listen are refused by Parse, naming the option and the value, like every other mistake.
func TestHooksProbeAndAddressRefusedAtParse(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--offline-http", "POST", "app"}, nil, `--offline-http "POST": http hook "offline-http": URL "POST"`},
		{[]string{"app"}, map[string]string{"DRAINIT_ONLINE_EXEC": `/bin/x "a b"`}, `DRAINIT_ONLINE_EXEC "/bin/x \"a b\"": exec hook "online-exec": command`},
		{[]string{"--post-stop-exec", "[1]", "app"}, nil, `--post-stop-exec "[1]": exec hook "post-stop-exec"`},
		{[]string{"--ready-probe", "tcp://x", "app"}, nil, `--ready-probe "tcp://x": ready probe: want tcp://HOST:PORT: missing port in address`},
		{[]string{"--http-addr", "8099", "app"}, nil, `--http-addr "8099": listen tcp: address 8099: missing port in address`},
		{[]string{"app"}, map[string]string{"DRAINIT_HTTP_ADDR": ":70000"}, `DRAINIT_HTTP_ADDR ":70000": listen tcp: address 70000: invalid port`},
	}
	for _, c := range cases {
		_, err := Parse(c.args, c.env, nil)
		var ce *Error
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.As(err, &ce) {
			t.Errorf("Parse(%q, %v) = %v, want a *Error starting %q", c.args, c.env, err, c.want)
		}
	}
	// Good values pass.
	if _, err := Parse([]string{"--offline-http", "POST http://127.0.0.1:1/x", "--ready-probe", "tcp://:8080", "--http-addr", ":8099", "app"}, nil, nil); err != nil {
		t.Error(err)
	}
}

// TestReadyProbeNotTheControlServer: a ready probe that reaches drainit's own control server
// passes at once (tcp://, /healthz) or never (/readyz), whatever the app does; it was accepted.
func TestReadyProbeNotTheControlServer(t *testing.T) {
	own := [][2]string{ // --http-addr, --ready-probe
		{":8099", "tcp://:8099"}, {":8099", "tcp://127.0.0.1:8099"}, {"0.0.0.0:8099", "http://localhost:8099/healthz"},
		{"127.0.0.1:8099", "http://127.0.0.1:8099/readyz"}, {"[::1]:8099", "tcp://localhost:8099"},
		{":80", "http://127.0.0.1/"}, {"localhost:8099", "tcp://127.0.0.1:8099"}, {"[::]:8099", "tcp://[::1]:8099"},
		{"0.0.0.0:8099", "tcp://127.0.0.1:08099"}, // the same port, written with a zero
	}
	for _, c := range own {
		_, err := Parse([]string{"--http-addr", c[0], "--ready-probe", c[1], "app"}, nil, nil)
		if want := fmt.Sprintf("--ready-probe %q: that is drainit's own control server (--http-addr %q)", c[1], c[0]); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("--http-addr %s --ready-probe %s: %v, want %q", c[0], c[1], err, want)
		}
	}
	others := [][2]string{
		{":8099", "tcp://:8080"}, {"127.0.0.1:8099", "tcp://[::1]:8099"}, {"127.0.0.1:8099", "tcp://10.1.2.3:8099"},
		{":0", "tcp://:8080"}, {":8099", "tcp://app:8099"},
	}
	for _, c := range others {
		if _, err := Parse([]string{"--http-addr", c[0], "--ready-probe", c[1], "app"}, nil, nil); err != nil {
			t.Errorf("--http-addr %s --ready-probe %s: %v", c[0], c[1], err)
		}
	}
}

// TestHookSecretsNotShown: an HTTP hook's headers and body, and a URL's user info, are not in
// the error that refuses the option nor in the note that says the flag replaced the variable:
// both reach the log, the pod's events and drainit check's reports.
func TestHookSecretsNotShown(t *testing.T) {
	const tok = "t0ken-s3cret"
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--offline-http", `{"url":"http://h/","headers":{"Authorization":"Bearer ` + tok + `"},}`, "app"}, nil,
			`--offline-http "{…70 bytes, not shown}": http hook "offline-http": not a valid JSON hook`},
		{[]string{"app"}, map[string]string{"DRAINIT_POST_STOP_HTTP": `{"method":"P T","url":"http://h/","body":"` + tok + `"}`},
			`DRAINIT_POST_STOP_HTTP "{\"method\":\"P…\",\"url\":\"http://h/\",\"body\":\"xxxxx\"}": http hook "post-stop-http": bad method "P…"`},
		{[]string{"--ready-probe", "http://u:" + tok + "@127.0.0.1:1/", "app"}, nil,
			`--ready-probe "http://xxxxx@127.0.0.1:1/": ready probe: URL "http://xxxxx@127.0.0.1:1/": user info in URLs is not supported`},
		{[]string{"--online-http", "http://u:" + tok + " @h/", "app"}, nil, `--online-http "http://xxxxx@h/": http hook "online-http": bad method "http…"`},
		{[]string{"--online-http", `{"url":"http://h/","headers":{"Authorization: Bearer ` + tok + `":""}}`, "app"}, nil,
			`--online-http "{\"url\":\"http://h/\",\"headers\":{\"Authorization…\":\"xxxxx\"}}": http hook "online-http": bad header name "Authorization…"`},
	} {
		_, err := Parse(c.args, c.env, nil)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), tok) {
			t.Errorf("Parse(%q, %v) = %v, want an error starting %q and without the secret", c.args, c.env, err, c.want)
		}
	}
	c, err := Parse([]string{"--offline-http", "http://127.0.0.1:1/x", "app"},
		map[string]string{"DRAINIT_OFFLINE_HTTP": `{"url":"http://127.0.0.1:1/y","headers":{"X-Consul-Token":"` + tok + `"}}`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(c.Warnings(), "\n")
	if !strings.Contains(w, `--offline-http given, DRAINIT_OFFLINE_HTTP=`) || !strings.Contains(w, `xxxxx`) || strings.Contains(w, tok) {
		t.Errorf("warnings %q: want the replaced variable named, its header masked", w)
	}
}

// TestListenAddrAsNetListen: what checkListenAddr refuses, net.Listen refuses with the same
// words (a port alone with a hint after them); what depends on the system is left to net.Listen,
// but for a service name, which it refuses where net.Listen may take it (from /etc/services).
func TestListenAddrAsNetListen(t *testing.T) {
	for _, a := range []string{"8099", ":99999", ":-1", "a:b:c", "[::1", ":18446744073709551616", "::1"} {
		err := checkListenAddr(a)
		if err == nil {
			t.Errorf("%q accepted", a)
			continue
		}
		ln, lerr := net.Listen("tcp", a)
		if lerr == nil {
			ln.Close()
			t.Errorf("%q: refused (%v) but net.Listen takes it", a, err)
		} else if !strings.HasPrefix(err.Error(), lerr.Error()) {
			t.Errorf("%q: %q, net.Listen says %q", a, err, lerr)
		}
	}
	for _, a := range []string{":0", "127.0.0.1:0", "[::1]:8099", "localhost:8099", "host.invalid:1"} {
		if err := checkListenAddr(a); err != nil {
			t.Errorf("%q refused: %v", a, err)
		}
	}
	for _, a := range []string{":http", "127.0.0.1:http-alt", ":8o99", ":+x"} {
		if err := checkListenAddr(a); err == nil || !strings.HasPrefix(err.Error(), "port ") {
			t.Errorf("%q: %v, want a service name refused", a, err)
		}
	}
	// What net.Listen takes and drainit prestop could not dial: no port (a random one), a sign,
	// an IPv6 zone.
	for a, want := range map[string]string{":": "no port", "localhost:": "no port", ":+80": "without a sign", ":-0": "without a sign", "[::1%lo]:8099": "IPv6 zone"} {
		if err := checkListenAddr(a); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want it refused (%s)", a, err, want)
		}
	}
}

// TestValidate: every mistake, where each value came from, and nothing about what is unseen.
func TestValidate(t *testing.T) {
	v := Validate([]string{"--drain=smart", "--grace-period", "5s", "-log-level=loud", "--", "app"},
		map[string]string{"DRAINIT_KILL_MARGIN": "x", "DRAINIT_GRACE_PERIOD": "60s"})
	var got []string
	for _, e := range v.Errors {
		got = append(got, e.Option)
	}
	if want := []string{"DRAINIT_KILL_MARGIN", "--drain", "--log-level"}; !slices.Equal(got, want) {
		t.Errorf("errors name %q, want %q (every mistake, Parse's first)", got, want)
	}
	if _, err := Parse([]string{"--drain=smart", "--grace-period", "5s", "-log-level=loud", "--", "app"},
		map[string]string{"DRAINIT_KILL_MARGIN": "x", "DRAINIT_GRACE_PERIOD": "60s"}, nil); err.Error() != v.Errors[0].Error() {
		t.Errorf("Parse says %v, Validate first %v", err, v.Errors[0])
	}
	for flag, want := range map[string]Setting{
		"grace-period": {Source: "--grace-period", Value: "5s", Arg: 2, Seen: true},
		"drain":        {Source: "--drain", Value: "smart", Arg: 0, Seen: true, Bad: true},
		"log-level":    {Source: "--log-level", Value: "loud", Arg: 3, Seen: true, Bad: true},
		"kill-margin":  {Source: "DRAINIT_KILL_MARGIN", Value: "x", Arg: -1, Seen: true, Bad: true},
		"drain-delay":  {Source: "", Value: "5s", Arg: -1, Seen: true},
	} {
		if s := v.Settings[flag]; s != want {
			t.Errorf("%s: %+v, want %+v", flag, s, want)
		}
	}
	if len(v.Settings) != len(Options()) {
		t.Errorf("%d settings for %d options", len(v.Settings), len(Options()))
	}

	// Unseen values: no error, even from a rule between options; the default stands in.
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"unseen grace, long drain", []string{"--grace-period", Unseen, "--drain-delay=40s", "app"}, nil},
		{"unseen in a value", []string{"--grace-period=1" + Unseen, "--drain-delay=40s", "app"}, nil},
		{"unseen variable", []string{"--drain-delay=40s", "app"}, map[string]string{"DRAINIT_GRACE_PERIOD": Unseen}},
		{"unseen drain mode", []string{"--drain-max=60s", "app"}, map[string]string{"DRAINIT_DRAIN": Unseen}},
		{"unseen minimum", []string{"--drain=adaptive", "--drain-max=1s", "app"}, map[string]string{"DRAINIT_DRAIN_MIN": Unseen}},
		{"unseen word for flags", []string{Unseen, "--drain-delay=40s", "app"}, nil},
		{"unseen flag name", []string{"--" + Unseen + "=1", "--drain-delay=40s", "app"}, nil},
	} {
		v := Validate(c.args, c.env)
		if len(v.Errors) != 0 {
			t.Errorf("%s: %v", c.name, v.Errors[0])
		}
		if s := v.Settings["grace-period"]; c.name != "unseen drain mode" && c.name != "unseen minimum" && (s.Seen || s.Value != "") {
			t.Errorf("%s: grace period %+v, want unseen", c.name, s)
		}
		if v.Config.GracePeriod.String() != "30s" {
			t.Errorf("%s: grace period %v, want the default", c.name, v.Config.GracePeriod)
		}
	}
	// An unseen app after "--" hides no flag.
	v = Validate([]string{"--drain-delay=40s", "--", Unseen}, nil)
	if len(v.Errors) != 1 || v.Errors[0].Flag != "drain-delay" || !v.Settings["grace-period"].Seen {
		t.Errorf("unseen app: %+v", v)
	}
	// ... and a "--" that a flag took as its value (`--http-token $TOKEN --` with TOKEN empty)
	// is that mistake, and nothing else is known.
	v = Validate([]string{"--http-token", "--", Unseen, "--drain-delay=40s"}, nil)
	if len(v.Errors) != 1 || v.Errors[0].Error() != `--http-token: needs a value: it took "--", the end of the options (an empty variable on the command line?)` ||
		v.Settings["grace-period"].Seen {
		t.Errorf(`"--" as a value: %+v`, v)
	}
	if c, err := parse(t, []string{"--offline-exec=--", "app"}, nil); err != nil || !slices.Equal(c.Hooks[HookSpec{Stage: StageOffline, Kind: HookExec}].Argv, []string{"--"}) {
		t.Errorf(`--offline-exec=-- (the value given as such): %v`, err)
	}
	// A command line that cannot be read: that one mistake, and nothing known.
	v = Validate([]string{"--nope", "--grace-period=1s", "app"}, nil)
	if len(v.Errors) != 1 || v.Errors[0].Error() != "unknown option --nope (drainit --help lists them)" || v.Errors[0].Flag != "" || v.Settings["grace-period"].Seen {
		t.Errorf("unknown flag: %+v", v)
	}
	v = Validate([]string{"-h", "app"}, nil)
	if len(v.Errors) != 1 || !errors.Is(v.Errors[0], ErrHelp) {
		t.Errorf("--help: %+v", v.Errors)
	}
	v = Validate([]string{"--grace-period=60s"}, nil)
	if len(v.Errors) != 1 || !errors.Is(v.Errors[0], ErrNoCommand) {
		t.Errorf("no command: %+v", v.Errors)
	}
}

// TestUnknownFlags: an option drainit does not know, or one without its value, is said as the
// user wrote it (--grace-period, where Go's flag package says -grace-period), with the option it
// most likely misspells.
func TestUnknownFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--drain-dealy 3s": "unknown option --drain-dealy (--drain-delay?)",
		"--grace 30s":      "unknown option --grace (--grace-period?)",
		"--grace-perido 1": "unknown option --grace-perido (--grace-period?)",
		"-loglevel debug":  "unknown option --loglevel (--log-level?)",
		"--xyzzy":          "unknown option --xyzzy (drainit --help lists them)",
		// A script saved with CRLF line ends: the refusal stays one line, and says why.
		"--grace-period\r 30s": `unknown option --grace-period\r (--grace-period?)`,
		// A name of any length is quoted clipped, and looked up only when short.
		"--" + strings.Repeat("grace-period", 1<<16): "unknown option --" + strings.Repeat("grace-period", 6)[:64] + "… (drainit --help lists them)",
		"--grace-period": "--grace-period needs a value",
	} {
		_, err := Parse(append(strings.Split(args, " "), "--", "app"), nil, nil)
		if args == "--grace-period" {
			_, err = Parse([]string{"--grace-period"}, nil, nil)
		}
		if err == nil || err.Error() != want {
			t.Errorf("%.60q: error %.200v, want %.200q", args, err, want)
		}
	}
}

// TestStrayVariables: a DRAINIT_* variable that is no option's is most likely a misspelt one;
// drainit starts, and its log says which variable it ignored and which it probably meant.
func TestStrayVariables(t *testing.T) {
	env := map[string]string{
		"DRAINIT_GRACE_PERIODS": "60s", "DRAINIT_GRACE": "60s", "DRAINIT_LOGLEVEL": "debug",
		"DRAINIT_XYZZY": "1", "DRAINIT_DRAIN_DELAY": "3s", "OTHER_GRACE_PERIOD": "1s",
		// A slip beats a prefix: it begins with DRAINIT_DRAIN, an option of its own.
		"DRAINIT_DRAIN_DEALY": "3s",
		// An image's convention for secrets: a hint to set the variable to the path would
		// make the path the token.
		"DRAINIT_HTTP_TOKEN_FILE": "/run/secrets/token",
	}
	c, err := Parse([]string{"app"}, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.GracePeriod != 30*time.Second || c.DrainDelay != 3*time.Second {
		t.Errorf("grace %v, drain delay %v: the strays changed something", c.GracePeriod, c.DrainDelay)
	}
	want := []string{
		"DRAINIT_DRAIN_DEALY is not one of drainit's variables: ignored (DRAINIT_DRAIN_DELAY?)",
		"DRAINIT_GRACE is not one of drainit's variables: ignored (DRAINIT_GRACE_PERIOD?)",
		"DRAINIT_GRACE_PERIODS is not one of drainit's variables: ignored (DRAINIT_GRACE_PERIOD?)",
		"DRAINIT_HTTP_TOKEN_FILE is not one of drainit's variables: ignored; drainit reads no _FILE variables: set DRAINIT_HTTP_TOKEN to the value itself (from a Secret: env valueFrom.secretKeyRef)",
		"DRAINIT_LOGLEVEL is not one of drainit's variables: ignored (DRAINIT_LOG_LEVEL?)",
		"DRAINIT_XYZZY is not one of drainit's variables: ignored",
	}
	if got := c.Warnings(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Every option's own variable is known, and so is the marker drainit sets for its app.
	all := map[string]string{SupervisorEnv: "pid=1 pidns=4026532871 start=1753715"}
	for _, o := range Options() {
		all[o.Env] = ""
	}
	if s := Strays(all); len(s) != 0 {
		t.Errorf("drainit's own variables taken for strays: %v", s)
	}
	// Many, or long: named, a hint for the first few only, and the log says how many more.
	many := map[string]string{"DRAINIT_A" + strings.Repeat("X", 1<<20): ""}
	for i := range 1000 {
		many[fmt.Sprintf("DRAINIT_V%04d", i)] = ""
	}
	c, err = Parse([]string{"app"}, many, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := c.Warnings()
	if len(w) != maxStrayHints+1 || w[maxStrayHints] != "and 985 more DRAINIT_* variables that are not drainit's: ignored" {
		t.Errorf("%d warnings, the last %q", len(w), w[len(w)-1])
	}
	if want := "DRAINIT_A" + strings.Repeat("X", maxStrayHintLen-len("DRAINIT_A")) + "… is not one of drainit's variables: ignored"; w[0] != want {
		t.Errorf("the long name: %.200q, want %q", w[0], want)
	}
}
