// Package config reads drainit's options from DRAINIT_* environment variables and command-line
// flags (the flag wins), checks them, and turns them into typed values. What a flag given twice
// does, and what is dropped and said, is in docs/options.md.
//
// Every option is declared once, as a field of Raw; flags, the environment, --help and drainit
// check (through Options) are all derived from it so the spellings cannot drift apart.
//
// Every rule drainit refuses to start on lives here, with the forms of the values the run later
// hands to other packages (hookspec.go, endpoint.go, calls.go). Parse is drainit's start;
// Validate is the same reading for drainit check, which wants every mistake at once and marks
// what a manifest does not show as Unseen. drainit check links this package, so it imports
// nothing of the init's running parts: of drainit's own packages only the pure ones (signals'
// names, logline's escaping).
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/drainit/drainit/internal/logline"
	"github.com/drainit/drainit/signals"
)

// EnvPrefix is the prefix of every environment variable drainit reads.
const EnvPrefix = "DRAINIT_"

// SupervisorEnv is the variable drainit sets, running an app, in the environment the app and the
// exec hooks inherit: the marker of cmd/drainit/nesting.go, by which a drainit started below it in
// run mode knows there is one above and refuses to start. It is drainit's own, not an option:
// Strays does not warn about it.
const SupervisorEnv = EnvPrefix + "SUPERVISOR"

// Raw holds every option as the user wrote it. The tags are the single source of truth:
// env (the name after DRAINIT_), flag, envDefault, help, and repeat: what a flag given more than
// once on the command line does (see Option.Repeat).
type Raw struct {
	GracePeriod    string `env:"GRACE_PERIOD" flag:"grace-period" envDefault:"30s" help:"match the pod's terminationGracePeriodSeconds (or docker stop -t); the stop sequence ends by then"`
	DrainDelay     string `env:"DRAIN_DELAY" flag:"drain-delay" envDefault:"5s" help:"fixed drain wait after the offline hooks, while the app still serves; with --drain adaptive, the wait when the app's connections cannot be watched (at most --drain-max)"`
	Drain          string `env:"DRAIN" flag:"drain" envDefault:"fixed" help:"fixed (wait --drain-delay) or adaptive (until no new connection for --drain-quiet, within --drain-min and --drain-max)"`
	DrainQuiet     string `env:"DRAIN_QUIET" flag:"drain-quiet" envDefault:"1s" help:"adaptive drain: end once no new connection has arrived for this long; auto: for a silence that follows the traffic (2·ln(10⁴)/rate of new connections, at least 100ms)"`
	DrainWatch     string `env:"DRAIN_WATCH" flag:"drain-watch" envDefault:"connections" help:"adaptive drain: what traffic is: connections (new TCP connections) or requests (also data on connections already open: for a pod behind a proxy that pools its connections, such as an ingress controller, a mesh sidecar or a cloud load balancer)"`
	DrainMin       string `env:"DRAIN_MIN" flag:"drain-min" envDefault:"0s" help:"adaptive drain: never shorter than this"`
	DrainMax       string `env:"DRAIN_MAX" flag:"drain-max" envDefault:"15s" help:"adaptive drain: never longer than this"`
	DrainPorts     string `env:"DRAIN_PORTS" flag:"drain-ports" envDefault:"" repeat:"add" help:"adaptive drain: watch these listeners (PORT or ADDR:PORT, comma-separated) instead of the app's own"`
	KillMargin     string `env:"KILL_MARGIN" flag:"kill-margin" envDefault:"2s" help:"SIGKILL everything this long before the grace deadline"`
	CleanupWait    string `env:"CLEANUP_WAIT" flag:"cleanup-wait" envDefault:"2s" help:"after the app exits, how long what it left behind gets between SIGTERM and SIGKILL"`
	Triggers       string `env:"TRIGGERS" flag:"triggers" envDefault:"TERM,INT" repeat:"add" help:"signals that start the stop sequence (--stop-signal is always one too); any other signal is forwarded at once"`
	StopSignal     string `env:"STOP_SIGNAL" flag:"stop-signal" envDefault:"" help:"signal the app gets at the stop step (default: the trigger signal, rewritten); it also starts the stop sequence, so a runtime that stops the container with it (STOPSIGNAL SIGQUIT) drains first"`
	Forward        string `env:"FORWARD" flag:"forward" envDefault:"group" help:"where signals go: group (the app's process group) or child (the app alone)"`
	Rewrite        string `env:"REWRITE" flag:"rewrite" envDefault:"" repeat:"add" help:"rewrite forwarded signals, FROM:TO,… (TO 0 or none drops it), e.g. HUP:USR1"`
	ExitMap        string `env:"EXIT_MAP" flag:"exit-map" envDefault:"" repeat:"add" help:"remap the app's exit status, FROM:TO,…, e.g. 143:0"`
	OfflineExec    string `env:"OFFLINE_EXEC" flag:"offline-exec" envDefault:"" repeat:"refuse" help:"command run after a trigger, before the drain, and after a crash of an app in service (e.g. deregister): a JSON array or a space-separated string"`
	OfflineHTTP    string `env:"OFFLINE_HTTP" flag:"offline-http" envDefault:"" repeat:"refuse" help:"HTTP call after a trigger, before the drain, and after a crash of an app in service: URL, METHOD URL, or JSON {method,url,headers,body}"`
	OnlineExec     string `env:"ONLINE_EXEC" flag:"online-exec" envDefault:"" repeat:"refuse" help:"command run once the app is ready (e.g. register)"`
	OnlineHTTP     string `env:"ONLINE_HTTP" flag:"online-http" envDefault:"" repeat:"refuse" help:"HTTP call once the app is ready"`
	PostStopExec   string `env:"POST_STOP_EXEC" flag:"post-stop-exec" envDefault:"" repeat:"refuse" help:"command run after the app has exited"`
	PostStopHTTP   string `env:"POST_STOP_HTTP" flag:"post-stop-http" envDefault:"" repeat:"refuse" help:"HTTP call after the app has exited"`
	HookTimeout    string `env:"HOOK_TIMEOUT" flag:"hook-timeout" envDefault:"10s" help:"how long each hook may take (also bounded by the grace deadline)"`
	ReadyProbe     string `env:"READY_PROBE" flag:"ready-probe" envDefault:"" help:"when the app is ready: tcp://HOST:PORT or http://... (2xx; plain HTTP only); default: at once"`
	HTTPAddr       string `env:"HTTP_ADDR" flag:"http-addr" envDefault:"" help:"control server address, e.g. :8099 (/prestop, /healthz, /readyz, /status); off when empty"`
	HTTPToken      string `env:"HTTP_TOKEN" flag:"http-token" envDefault:"" help:"bearer token required by /prestop and /status"`
	LogFormat      string `env:"LOG_FORMAT" flag:"log-format" envDefault:"" help:"json or console (default: console on a terminal, else json)"`
	LogLevel       string `env:"LOG_LEVEL" flag:"log-level" envDefault:"info" help:"debug, info, warn or error (on a terminal with no level set: warnings and errors, and the stop sequence once it starts)"`
	TerminationLog string `env:"TERMINATION_LOG" flag:"termination-log" envDefault:"/dev/termination-log" help:"file for the stop summary, written if it exists and is writable (empty: off)"`
}

// Forward says where forwarded signals go.
type Forward int

// The --forward modes.
const (
	ForwardGroup Forward = iota // the app's whole process group
	ForwardChild                // the app's process alone
)

// Config is the checked, typed configuration of the run subcommand.
type Config struct {
	Command     []string
	GracePeriod time.Duration
	DrainDelay  time.Duration
	Adaptive    bool // --drain adaptive
	DrainQuiet  time.Duration
	// DrainQuietAuto: --drain-quiet auto, a quiet period that follows the traffic
	// (drainwatch.Config.Auto); DrainQuiet is then zero.
	DrainQuietAuto bool
	// DrainRequests: --drain-watch requests, the adaptive drain counts data on open connections
	// as traffic too (drainwatch.Config.Requests).
	DrainRequests bool
	DrainMin      time.Duration
	DrainMax      time.Duration
	DrainPorts    []Endpoint
	KillMargin    time.Duration
	CleanupWait   time.Duration
	// Triggers start the stop sequence: --triggers, and the stop signal when one is set, as
	// whatever a platform sends to stop a container must start it (docs/stop-sequence.md, "the
	// stop signal is always a trigger"). A stop signal that drainit never forwards (KILL, STOP,
	// CHLD...: signals.Forwardable) is not added.
	Triggers       []syscall.Signal
	StopSignal     syscall.Signal // 0: the trigger signal, through Rewrite
	Forward        Forward
	Rewrite        signals.Rewrite
	ExitMap        signals.ExitMap
	HookTimeout    time.Duration
	Hooks          map[HookSpec]Hook // the hook options that are set, by kind
	ReadyProbe     string
	Probe          *Probe // ReadyProbe as read; nil without one
	HTTPAddr       string
	HTTPToken      string
	LogFormat      string // "json" or "console"; "" decides by the terminal
	LogLevel       string
	TerminationLog string

	source map[string]string // flag name -> where its value came from
	notes  []string          // what the command line and the environment gave that was dropped
}

// OptionName is how the user spelled the option whose flag name is flag: "--flag" or
// "DRAINIT_ENV", for error messages about values checked outside this package.
func (c *Config) OptionName(flag string) string {
	if s := c.source[flag]; s != "" {
		return s
	}
	return "--" + flag
}

// Budget is the stop's time budget under this configuration.
func (c *Config) Budget() Budget {
	return NewBudget(BudgetOptions{Grace: c.GracePeriod, KillMargin: c.KillMargin, DrainDelay: c.DrainDelay,
		DrainMax: c.DrainMax, Adaptive: c.Adaptive, HookOverrun: HookOverrun, LastHookOverrun: LastHookOverrun})
}

// Warnings lists, for the log at start-up, what was given but dropped (a value the flag
// replaced, a flag given twice, whitespace around the token) and the valid settings that cannot
// all fit in the grace period, with the numbers.
func (c *Config) Warnings() []string {
	out := slices.Clone(c.notes)
	b := c.Budget()
	n := 0
	for spec := range c.Hooks {
		if spec.Stage == StageOffline {
			n++
		}
	}
	if slow := mulDur(n, c.HookTimeout); n > 0 && slow > b.OfflineRoom {
		out = append(out, fmt.Sprintf(
			"offline hooks (%d × hook timeout %s) + drain %s = %s, past the latest stop signal at %s (grace period %s - kill margin %s - %s for the app to stop): slow hooks will cut the drain short",
			n, c.HookTimeout, b.Drain, AddDur(slow, b.Drain), b.StopBy, c.GracePeriod, c.KillMargin, b.KillAt-b.StopBy))
	}
	if w := c.gracefulStopNote(); w != "" {
		out = append(out, w)
	} else if w := c.masterWorkerNote(); w != "" {
		out = append(out, w)
	}
	if w := c.openControlNote(); w != "" {
		out = append(out, w)
	}
	for spec := range c.Hooks {
		if spec.Stage == StagePostStop && c.HookTimeout > b.PostStopRoom {
			out = append(out, fmt.Sprintf(
				"post-stop hook timeout %s exceeds what a stop can leave it (grace %s - drain %s - %s for drainit's exit = %s): it may be cut at the deadline",
				c.HookTimeout, c.GracePeriod, b.Drain, b.Deadline-b.PostStopDeadline, b.PostStopRoom))
			break
		}
	}
	return out
}

// AddDur adds b to a up to the largest Duration, which it stands for anything longer: 1500000h
// of drain and as much kill margin wrapped below 0 and passed for less than a 30s grace period,
// and the stop SIGKILLed the app at its trigger. drainit check adds the manifest's times with it.
func AddDur(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulDur is n times d (neither negative), up to the largest Duration.
func mulDur(n int, d time.Duration) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

// gracefulStopNote warns when the app's command looks like a server whose graceful stop is not
// SIGTERM (signals.ByCommand) and no --stop-signal says how to stop it. A guess from a name, so
// a warning, which --stop-signal TERM silences.
func (c *Config) gracefulStopNote() string {
	if c.StopSignal != 0 {
		return ""
	}
	s, word, ok := signals.ByCommand(c.Command)
	if !ok || slices.Contains(c.Triggers, s.Signal) {
		return ""
	}
	name, short := signals.Name(s.Signal), strings.TrimPrefix(signals.Name(s.Signal), "SIG")
	after := ""
	if got, ok := c.Rewrite.Apply(syscall.SIGTERM); slices.Contains(c.Triggers, syscall.SIGTERM) && (!ok || got != s.Signal) {
		after = fmt.Sprintf(", and after a SIGTERM's drain %s gets SIGTERM, its fast stop, which cuts the requests in hand", s.App)
	}
	return fmt.Sprintf("the app looks like %s (%s), which stops gracefully on %s, its images' STOPSIGNAL: "+
		"%s is no trigger, so a runtime that stops the container with it has it forwarded at once, with no drain%s; "+
		"set --stop-signal %s (DRAINIT_STOP_SIGNAL=%s)%s, or --stop-signal TERM if SIGTERM is meant",
		s.App, logline.Escape(word), name, name, after, short, short, s.ForwardAdvice(c.forwardName()))
}

// masterWorkerNote warns when the app's command looks like a server whose master passes each
// signal on to its workers (signals.ByCommand) under --forward group. gracefulStopNote says it
// where it applies, with its own advice.
func (c *Config) masterWorkerNote() string {
	s, word, ok := signals.ByCommand(c.Command)
	if !ok || !s.ForwardChild || c.Forward == ForwardChild {
		return ""
	}
	return fmt.Sprintf("the app looks like %s (%s), whose master (-W, as its images run it) passes each signal on to its workers: "+
		"with --forward group a worker gets every signal drainit forwards twice, the stop signal included, and exits 138 or 139 now "+
		"and then; set --forward child (DRAINIT_FORWARD=child)", s.App, logline.Escape(word))
}

// openControlNote warns when the control server listens beyond loopback with no token: in a
// cluster, any pod can reach the pod's port, whatever its namespace, unless a NetworkPolicy says
// otherwise.
func (c *Config) openControlNote() string {
	if c.HTTPToken != "" {
		return ""
	}
	port, open := ControlBeyondLoopback(c.HTTPAddr)
	if !open {
		return ""
	}
	return fmt.Sprintf("the control server (%s %q) needs no token and listens beyond loopback: anyone who reaches the pod's port %s "+
		"can start the stop sequence (/prestop) and read /status; set --http-token (DRAINIT_HTTP_TOKEN, from a Secret) and send it "+
		"from the preStop httpGet (an Authorization: Bearer header), or, for an exec preStop (drainit prestop), listen on 127.0.0.1:%s",
		c.OptionName("http-addr"), logline.Escape(c.HTTPAddr), port, port)
}

// ControlBeyondLoopback says whether a control server at addr (--http-addr, as drainit takes it)
// listens beyond loopback: on every address, or on one that is not the loopback interface's (a
// name other than localhost counts as beyond). port is addr's. drainit's start warning and
// drainit check's control-no-token both decide by it.
func ControlBeyondLoopback(addr string) (port string, beyond bool) {
	host, port, err := net.SplitHostPort(addr)
	if addr == "" || err != nil {
		return "", false
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || IsLocalhost(host) {
		return port, false
	}
	return port, true
}

// forwardName is --forward as written: "group" or "child".
func (c *Config) forwardName() string {
	if c.Forward == ForwardChild {
		return "child"
	}
	return "group"
}

// HookStage is when in the app's life a hook runs. It is the one declaration of the stages:
// the hook options' names are derived from it, and the supervisor runs hooks by it.
type HookStage int

// The hook stages, in the order of the app's life.
const (
	StageOffline  HookStage = iota // after a trigger, before the drain; after a crash of an app in service
	StageOnline                    // once the app is ready
	StagePostStop                  // after the app and everything it left have exited
)

// String is the stage as the hook options spell it: "offline", "online", "post-stop".
func (s HookStage) String() string {
	if names := []string{"offline", "online", "post-stop"}; s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("HookStage(%d)", int(s))
}

// HookKind is what a hook does.
type HookKind int

// The hook kinds.
const (
	HookExec HookKind = iota // runs a command
	HookHTTP                 // makes an HTTP call
)

// String is the kind as the hook options spell it: "exec" or "http".
func (k HookKind) String() string {
	if names := []string{"exec", "http"}; k >= 0 && int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("HookKind(%d)", int(k))
}

// HookSpec names one hook option: its stage and kind. Flag is the option's flag name, so that
// whoever parses the hook's value can name the option in an error.
type HookSpec struct {
	Stage HookStage
	Kind  HookKind
}

// Flag is the option's flag name, e.g. "offline-exec".
func (h HookSpec) Flag() string { return h.Stage.String() + "-" + h.Kind.String() }

// hookSpecs are every hook option, stage by stage.
var hookSpecs = []HookSpec{
	{StageOffline, HookExec}, {StageOffline, HookHTTP},
	{StageOnline, HookExec}, {StageOnline, HookHTTP},
	{StagePostStop, HookExec}, {StagePostStop, HookHTTP},
}

// Error is a configuration mistake: which option, the value given and what is wrong with it.
type Error struct {
	Option string // "--grace-period" or "DRAINIT_GRACE_PERIOD", whichever the value came from
	// Flag is the option's flag name ("grace-period") however it was given; Option and Flag are
	// empty for a mistake in the command line itself: a flag drainit does not know, a flag
	// without its value, no command.
	Flag  string
	Value string
	Err   error
}

func (e *Error) Error() string {
	if e.Option == "" {
		return e.Err.Error()
	}
	// The reason may quote the value as it was (the net package's "address \r: missing port"):
	// escaped, so that the refusal stays one line.
	if secret(e.Flag) {
		return fmt.Sprintf("%s: %s", e.Option, logline.Escape(e.Err.Error())) // the message goes to logs: not the value
	}
	return fmt.Sprintf("%s %q: %s", e.Option, shown(e.Flag, e.Value), logline.Escape(e.Err.Error()))
}

// secret says whether the option's value must not be written to the log.
func secret(flagName string) bool { return flagName == "http-token" }

// shown is an option's value as errors and the log show it: an HTTP hook's or the ready probe's
// with its password, headers and body masked (Redact).
func shown(flagName, value string) string {
	httpHook := slices.ContainsFunc(hookSpecs, func(h HookSpec) bool { return h.Kind == HookHTTP && h.Flag() == flagName })
	if httpHook || flagName == "ready-probe" {
		return Redact(value)
	}
	return value
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNoCommand is the mistake of a command line that names no app to run.
var ErrNoCommand = errors.New("no command given: drainit [OPTIONS] [--] COMMAND [ARG...]")

// ErrHelp is returned by Parse when --help was asked for; the usage has been written.
var ErrHelp = flag.ErrHelp

// Parse reads the environment (lookup, e.g. os.LookupEnv's map) and then args (without the
// program name), and returns the checked configuration. Usage text for --help goes to usage.
// The error is the first mistake drainit refuses to start with, a *Error (or ErrHelp).
func Parse(args []string, environ map[string]string, usage io.Writer) (*Config, error) {
	p, err := parseRaw(args, environ)
	if errors.Is(err, flag.ErrHelp) {
		WriteUsage(usage)
		return nil, ErrHelp
	}
	if err != nil {
		return nil, err
	}
	v := p.check()
	if len(v.Errors) > 0 {
		// One line: the first mistake. Fixing it and running again shows the next.
		return nil, v.Errors[0]
	}
	return v.Config, nil
}

// Unseen stands, in the arguments and the environment given to Validate, for a value that is set
// but that the caller cannot see: a Kubernetes manifest shows a variable from a Secret, a
// ConfigMap or envFrom, or an unresolved $(VAR), but not its value. A NUL byte can be in no
// real argument or variable, so drainit itself never meets it.
const Unseen = "\x00unseen\x00"

// Setting is one option as Validate found it.
type Setting struct {
	// Source is where the value comes from: "--grace-period", "DRAINIT_GRACE_PERIOD", or ""
	// for the default.
	Source string
	Value  string // as given (the default when Source is ""); "" when unseen
	Arg    int    // when Source is the flag: the index in args of the word that holds the value; else -1
	// Seen is false when the value contains Unseen, or when an unseen word stands where flags
	// are read (it may set any option). The Config then holds the option's default, and no rule
	// that involves the option is applied.
	Seen bool
	Bad  bool // drainit refuses the value: an Error names the option
}

// Validation is what drainit makes of a configuration without running it.
type Validation struct {
	// Config is the configuration drainit would run with, unseen options at their defaults. Its
	// fields for options that are Bad are not meaningful.
	Config   *Config
	Settings map[string]Setting // every option, by flag name
	// Errors are every mistake drainit refuses to start with (it exits 2 naming the first), in
	// the order Parse finds them; each is the message drainit prints.
	Errors []*Error
}

// Validate checks a configuration as Parse does, for a caller that sees it from outside (drainit
// check reading a manifest): it returns every mistake rather than the first, where each value
// comes from, and applies no rule to a value that is Unseen. --help, which makes drainit print
// its usage instead of running the app, is a mistake here.
func Validate(args []string, environ map[string]string) *Validation {
	p, err := parseRaw(args, environ)
	if err == nil {
		return p.check()
	}
	// The command line cannot be read, so nothing in it is known: every option is unseen.
	hidden := strings.Contains(err.Error(), Unseen)
	p, perr := parseRaw(nil, nil)
	if perr != nil {
		panic("config: the defaults do not parse: " + perr.Error())
	}
	p.hidden, p.cmd = true, nil
	v := p.check()
	if hidden {
		return v // an unseen word where a flag was expected: nothing is known to be wrong
	}
	if errors.Is(err, flag.ErrHelp) {
		err = fmt.Errorf("%w: drainit prints its usage and exits 0 without running the app", ErrHelp)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		ce = &Error{Err: err}
	}
	v.Errors = append([]*Error{ce}, v.Errors...)
	return v
}

// parsed is a command line and environment read into a Raw, before any value is checked.
type parsed struct {
	raw  Raw
	from map[string]string // flag name -> where its value came from: "--flag" or "DRAINIT_ENV"
	arg  map[string]int    // flag name -> the index in args of the word that holds its value
	// given: flag name -> every value the command line gave it, in order, when more than one.
	given map[string][]string
	// shadowed: flag name -> the value of its variable, when the flag replaced it.
	shadowed map[string]string
	cmd      []string
	// hidden: an unseen word stands where flags are read, so any option may be set there.
	hidden bool
	strays []Stray // DRAINIT_* variables that are no option's
	// emptied: the options whose variable is set but empty, taken as unset (their default),
	// where their flag given empty would mean another thing.
	emptied []Option
	// trimmed: the options whose value, as taken, had whitespace around it (trimValue).
	trimmed map[string]bool
}

// flagError says the flag package's errors in drainit's words: an option as it is written
// (--grace-period, where the package says -grace-period), and for an unknown one, the option it
// most likely misspells.
func flagError(err error) error {
	if strings.Contains(err.Error(), Unseen) {
		return err // drainit check's stand-in for a value it cannot see (Validate): kept as it is
	}
	flags := make([]string, 0, len(options()))
	for _, o := range options() {
		flags = append(flags, o.Flag)
	}
	return FlagError(err, flags, "drainit --help")
}

// HelpFlag defines -help and -h on fs as booleans and returns whether help was asked for, to be
// read once fs.Parse has returned. Left undefined, the flag package takes any -help or -h for a
// request, --help=false too.
func HelpFlag(fs *flag.FlagSet) *bool {
	asked := new(bool)
	set := func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		*asked = b
		return nil
	}
	fs.BoolFunc("help", "print the usage and exit", set)
	fs.BoolFunc("h", "print the usage and exit", set)
	return asked
}

// FlagError is flagError for a subcommand's own flag set (drainit check, drainit prestop):
// flags are its flags' names, help the command that lists them ("": the caller names it).
func FlagError(err error, flags []string, help string) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		// The package drops the dashes as written; a one-letter option was most likely
		// written as one (-x), the others as drainit writes them.
		opt := "--" + logline.Escape(clip(name))
		if len([]rune(name)) == 1 {
			opt = "-" + logline.Escape(name)
		}
		if near := nearestFlag(name, flags); near != "" {
			return fmt.Errorf("unknown option %s (--%s?)", opt, near)
		}
		if help == "" {
			return fmt.Errorf("unknown option %s", opt)
		}
		return fmt.Errorf("unknown option %s (%s lists them)", opt, help)
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		// "invalid boolean value %q for -%s: %v": the value is not repeated, as for bad syntax.
		if _, after, ok := strings.Cut(rest, " for -"); ok {
			name, _, _ := strings.Cut(after, ": ")
			return fmt.Errorf("--%s takes true or false (or no value), not the one given", logline.Escape(name))
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", name) // a name the parser knows: short
	}
	if word, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		// The word as given ("---x"), but not what follows its "=": it may be a token.
		if name, _, valued := strings.Cut(word, "="); valued {
			msg = "bad flag syntax: " + name + "=…"
		}
		return fmt.Errorf("%s (an option is --name or --name=value)", logline.Escape(msg))
	}
	return errors.New(logline.Escape(msg))
}

// parseRaw fills a Raw from the environment and the flags, and reports where each value came
// from so that errors can name what the user actually wrote. It returns flag.ErrHelp for --help.
func parseRaw(args []string, environ map[string]string) (*parsed, error) {
	p := &parsed{from: map[string]string{}, arg: map[string]int{}, given: map[string][]string{}, shadowed: map[string]string{},
		strays: Strays(environ), trimmed: map[string]bool{}}
	trimmed := make(map[string]string, len(environ))
	for k, v := range environ {
		trimmed[k] = trimValue(v)
	}
	for _, o := range options() {
		if v, ok := environ[o.Env]; ok && trimmed[o.Env] != v {
			p.trimmed[o.Flag] = true
		}
	}
	environ = trimmed
	if err := env.ParseWithOptions(&p.raw, env.Options{Prefix: EnvPrefix, Environment: environ}); err != nil {
		return nil, &Error{Err: fmt.Errorf("environment: %w", err)}
	}
	// caarlos0/env takes an empty variable for an unset one and applies the default; for the
	// termination log, empty is documented as "off", so an explicit empty value must win.
	if v, ok := environ[EnvPrefix+"TERMINATION_LOG"]; ok && v == "" {
		p.raw.TerminationLog = ""
	}
	fs := flag.NewFlagSet("drainit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	last := -1                      // the index of the last word a flag took its value from
	values := map[string][]string{} // flag name -> every value the command line gave it
	tookEnd := ""                   // a flag that took the word "--" as its value
	for _, o := range options() {
		v := &argValue{p: p.raw.field(o.Flag), fs: fs, n: len(args), at: func(i int, s string, trimmed bool) {
			p.arg[o.Flag], last = i, i
			p.trimmed[o.Flag] = trimmed
			values[o.Flag] = append(values[o.Flag], s)
			if s == "--" && i < len(args) && args[i] == "--" && tookEnd == "" {
				tookEnd = o.Flag
			}
		}}
		fs.Var(v, o.Flag, o.Help)
		if _, ok := environ[o.Env]; ok {
			p.from[o.Flag] = o.Env
		}
	}
	help := HelpFlag(fs)
	if err := fs.Parse(args); err != nil {
		return nil, &Error{Err: flagError(err)}
	}
	if *help {
		return nil, flag.ErrHelp
	}
	if tookEnd != "" {
		// `--http-token $TOKEN -- app` with TOKEN empty: the value would be "--", and the app's
		// name taken for the end of the options.
		return nil, &Error{Option: "--" + tookEnd, Flag: tookEnd, Value: "--",
			Err: errors.New("needs a value: it took \"--\", the end of the options (an empty variable on the command line?)")}
	}
	fs.Visit(func(f *flag.Flag) {
		if ev, ok := environ[p.from[f.Name]]; ok {
			p.shadowed[f.Name] = ev
		}
		p.from[f.Name] = "--" + f.Name
	})
	for _, o := range options() {
		if v, ok := environ[o.Env]; ok && v == "" && p.from[o.Flag] == o.Env && o.Default != "" && o.Flag != "termination-log" {
			p.emptied = append(p.emptied, o)
		}
		vs := values[o.Flag]
		if len(vs) < 2 {
			continue
		}
		p.given[o.Flag] = vs
		if o.Repeat == RepeatAdd {
			// Each value is a list: the lists add up. An empty one adds nothing (as the
			// variable's empty value, it says "none" only when it is the only one).
			*p.raw.field(o.Flag) = strings.Join(slices.DeleteFunc(slices.Clone(vs), func(s string) bool {
				return strings.TrimSpace(s) == ""
			}), ",")
		}
	}
	p.cmd = fs.Args()
	// The flag parser stops at "--" or at the first word that is not a flag. An unseen word there
	// (not after "--") may be flags: it hides the rest of drainit's options.
	if len(p.cmd) > 0 && strings.Contains(p.cmd[0], Unseen) {
		end := len(args) - len(p.cmd) // the words before the command
		p.hidden = !(end > 0 && args[end-1] == "--" && last != end-1)
	}
	return p, nil
}

// argValue is a string flag that records which word of the command line gave it its value, and
// the value, every time it is given.
type argValue struct {
	p  *string
	fs *flag.FlagSet
	n  int                                     // the number of words being parsed
	at func(i int, value string, trimmed bool) // the value as taken, and whether trimValue changed it
}

func (v *argValue) String() string {
	if v == nil || v.p == nil {
		return "" // the flag package makes zero values to tell defaults apart
	}
	return *v.p
}

// Set takes the value. The flag package has already consumed the word that holds it, so the
// words left tell which one it was.
func (v *argValue) Set(given string) error {
	s := trimValue(given)
	*v.p = s
	v.at(v.n-len(v.fs.Args())-1, s, s != given)
	return nil
}

// Option is one of drainit's options, as Raw declares it.
type Option struct {
	Field   string // Raw's field
	Flag    string // "grace-period"
	Env     string // "DRAINIT_GRACE_PERIOD"
	Default string
	Help    string
	Repeat  Repeat // what the flag given more than once does
}

// Repeat is what an option's flag given more than once on the command line does. Whatever it
// is, nothing is dropped silently: what is not used is in Config.Warnings, or refused.
type Repeat string

// The Repeat rules (docs/options.md, "A flag given twice"). A flag and its DRAINIT_ variable
// never add up: the flag wins, as the variable is often set by the image or a ConfigMap, the
// flag by whoever runs it.
const (
	RepeatLast   Repeat = ""       // the last value wins (the flag package's rule)
	RepeatAdd    Repeat = "add"    // the values are lists and add up
	RepeatRefuse Repeat = "refuse" // refused: running one of two hooks would half-apply them
)

// Options lists every option in Raw's order, from Raw's tags: the flags, the environment,
// --help and drainit check all read this list.
func Options() []Option { return slices.Clone(options()) }

// options is Options, read from Raw's tags once: parsing looks the list up for every option
// (field), and reading the tags on each lookup was most of config.Parse's time at start-up
// (bench/STARTUP.md).
var options = sync.OnceValue(func() []Option {
	t := reflect.TypeFor[Raw]()
	out := make([]Option, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		out = append(out, Option{sf.Name, sf.Tag.Get("flag"), EnvPrefix + sf.Tag.Get("env"), sf.Tag.Get("envDefault"), sf.Tag.Get("help"), Repeat(sf.Tag.Get("repeat"))})
	}
	return out
})

// field is the Raw field of the option whose flag name is flagName.
func (r *Raw) field(flagName string) *string {
	for i, o := range options() {
		if o.Flag == flagName {
			return reflect.ValueOf(r).Elem().Field(i).Addr().Interface().(*string)
		}
	}
	panic("config: no option --" + flagName)
}

// Subcommands are the first arguments that make drainit do something other than run an app;
// any other first argument is the run subcommand's.
func Subcommands() []string {
	return []string{"version", "--version", "sleep", "prestop", "check"}
}

// SubcommandNear is the subcommand that name most likely misspells, within two edits ("chekc":
// "check"), or "": for the app that drainit could not find when it stood where a subcommand
// does, its first argument.
func SubcommandNear(name string) string {
	if len(name) > maxStrayHintLen {
		return ""
	}
	near, dist := "", 3
	for _, s := range Subcommands() {
		if d := editDistance(name, s); d < dist {
			near, dist = s, d
		}
	}
	return near
}

// WriteUsage writes --help: the command line and every option with its environment name and
// default.
func WriteUsage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  drainit [OPTIONS] [--] COMMAND [ARG...]   run COMMAND as the app and own its stop sequence
  drainit sleep DURATION                    sleep (a preStop exec hook for images without sleep)
  drainit prestop [--addr ADDR] [--token T] ask the running drainit to drain; returns when drained
  drainit check [OPTIONS] [PATH...|-]       check Kubernetes manifests' termination timing
                                            (runs drainit-check, from drainit's directory or PATH)
  drainit version

Options (each also DRAINIT_<NAME> in the environment; the flag wins and the log says what it
replaced; a flag given twice: the last wins, the lists add up, a hook is refused):
`)
	for _, o := range options() {
		def := o.Default
		if def == "" {
			def = "none"
		}
		fmt.Fprintf(w, "  --%s\n      %s (default %s)\n      %s\n", o.Flag, o.Env, def, o.Help)
		switch o.Repeat {
		case RepeatAdd:
			fmt.Fprintf(w, "      repeatable: --%s A --%s B is A,B\n", o.Flag, o.Flag)
		case RepeatRefuse:
			fmt.Fprint(w, "      once only: one command or call per option\n")
		}
	}
	fmt.Fprint(w, "\nDurations are Go durations (500ms, 30s) or a number of seconds (30).\n")
	fmt.Fprintf(w, `
drainit sets %s in the app's environment. A drainit started below it to run an
app exits 2 without starting it: two stop sequences would drain twice and outlive the grace
period. Keep one (the runtime's --init, or drainit in the image's ENTRYPOINT), or unset the
variable where nesting is meant. check, sleep, prestop and version are not affected.
`, SupervisorEnv)
}

// check converts and validates every option and collects every mistake, in this order: each
// value by itself, then the rules between values, then the command, then the hooks, the ready
// probe and the control server's address (so that Parse names the mistake drainit has always
// named first). A rule is applied only when every value it involves is seen and good.
func (p *parsed) check() *Validation {
	r := p.raw
	c := &Config{Command: p.cmd, source: p.from}
	v := &Validation{Config: c, Settings: map[string]Setting{}}
	for _, o := range options() {
		f := r.field(o.Flag)
		s := Setting{Source: p.from[o.Flag], Value: *f, Arg: -1, Seen: true}
		if i, ok := p.arg[o.Flag]; ok && s.Source == "--"+o.Flag {
			s.Arg = i
		}
		if p.hidden || strings.Contains(*f, Unseen) {
			s.Seen, s.Value, *f = false, "", o.Default
		}
		v.Settings[o.Flag] = s
	}
	c.TerminationLog = r.TerminationLog
	bad := func(flagName, value string, err error) {
		s := v.Settings[flagName]
		s.Bad = true
		v.Settings[flagName] = s
		v.Errors = append(v.Errors, &Error{Option: c.OptionName(flagName), Flag: flagName, Value: value, Err: err})
	}
	usable := func(flags ...string) bool {
		for _, f := range flags {
			if s := v.Settings[f]; !s.Seen || s.Bad {
				return false
			}
		}
		return true
	}
	// choice is word when it is one of words; else it refuses value ("must be A or B") and is "".
	choice := func(flagName, value, word string, words ...string) string {
		if slices.Contains(words, word) {
			return word
		}
		last := len(words) - 1
		list := strings.Join(words[:last], ", ") + " or " + words[last]
		bad(flagName, value, errors.New("must be "+list))
		return ""
	}
	dur := func(flagName, value string, out *time.Duration) {
		d, err := ParseDuration(value)
		if err != nil {
			bad(flagName, value, err)
		}
		*out = d
	}
	// What was given but is not used: the log says so at start.
	for _, o := range options() {
		if ev, ok := p.shadowed[o.Flag]; ok {
			if secret(o.Flag) {
				c.notes = append(c.notes, fmt.Sprintf("--%s given, %s ignored", o.Flag, o.Env))
			} else {
				c.notes = append(c.notes, fmt.Sprintf("--%s given, %s=%q ignored", o.Flag, o.Env, shown(o.Flag, ev)))
			}
		}
		if vs := p.given[o.Flag]; len(vs) > 1 && o.Repeat == RepeatLast {
			if secret(o.Flag) {
				c.notes = append(c.notes, fmt.Sprintf("--%s given %d times: the last one is used", o.Flag, len(vs)))
			} else {
				c.notes = append(c.notes, fmt.Sprintf("--%s given %d times: the last, %q, is used; %s ignored",
					o.Flag, len(vs), shown(o.Flag, vs[len(vs)-1]), quoteAll(o.Flag, vs[:len(vs)-1])))
			}
		}
	}
	for _, o := range p.emptied {
		// caarlos0/env takes an empty variable for an unset one, as most tools do (a template
		// that rendered nothing); said, since the flag given empty means another thing
		// (--triggers= is no trigger, --grace-period= is refused).
		c.notes = append(c.notes, fmt.Sprintf("%s is empty: taken as unset, the default %q", o.Env, o.Default))
	}
	for i, st := range p.strays {
		if i == maxStrayHints {
			c.notes = append(c.notes, fmt.Sprintf("and %d more DRAINIT_* variables that are not drainit's: ignored", len(p.strays)-i))
			break
		}
		c.notes = append(c.notes, st.String())
	}
	dur("grace-period", r.GracePeriod, &c.GracePeriod)
	dur("drain-delay", r.DrainDelay, &c.DrainDelay)
	dur("kill-margin", r.KillMargin, &c.KillMargin)
	dur("cleanup-wait", r.CleanupWait, &c.CleanupWait)
	dur("hook-timeout", r.HookTimeout, &c.HookTimeout)
	if c.KillMargin == 0 && usable("kill-margin") {
		// Accepted: where nothing SIGKILLs at the deadline (docker stop -t 0 aside, a plain
		// `kill`), 0 is what the user means. Said, since under a runtime it rarely is.
		c.notes = append(c.notes, fmt.Sprintf(
			"%s 0: drainit's SIGKILL comes at the deadline, when the runtime's own does (Kubernetes, docker stop), which may come first: the post-stop hooks then get no time, and drainit's summary and the app's exit status are lost",
			c.OptionName("kill-margin")))
	}
	if c.HookTimeout == 0 && !v.Settings["hook-timeout"].Bad {
		// Only the stop has a deadline: a post-stop hook after the app's own exit, or an online
		// hook, would have no limit at all, and a hung one would keep the container from exiting.
		bad("hook-timeout", r.HookTimeout, errors.New("must be more than 0: a hook needs a limit of its own"))
	}
	if strings.TrimSpace(r.DrainQuiet) == "auto" {
		c.DrainQuietAuto = true
	} else if d, err := ParseDuration(r.DrainQuiet); err != nil {
		if !outOfRange(err) {
			err = errors.New("not auto or a duration (use auto, 1s, 500ms or a number of seconds)")
		}
		bad("drain-quiet", r.DrainQuiet, err)
	} else if d == 0 {
		// 0 would end the drain at the first poll that saw nothing new: no quiet at all. (The
		// drain watcher took it for its default, 1 s, in silence.)
		bad("drain-quiet", r.DrainQuiet, errors.New("must be more than 0, or auto"))
	} else {
		c.DrainQuiet = d
	}
	watch := choice("drain-watch", r.DrainWatch, strings.TrimSpace(r.DrainWatch), "connections", "requests")
	c.DrainRequests = watch == "requests"
	dur("drain-min", r.DrainMin, &c.DrainMin)
	dur("drain-max", r.DrainMax, &c.DrainMax)
	c.Adaptive = choice("drain", r.Drain, r.Drain, "fixed", "adaptive") == "adaptive"
	if r.DrainPorts != "" {
		var err error
		if c.DrainPorts, err = ParseEndpoints(r.DrainPorts); err != nil {
			bad("drain-ports", r.DrainPorts, err)
		}
	}
	c.Hooks = map[HookSpec]Hook{}
	for _, spec := range hookSpecs {
		if h := *r.field(spec.Flag()); strings.TrimSpace(h) != "" {
			c.Hooks[spec] = Hook{Spec: h}
		}
	}
	c.ReadyProbe, c.HTTPAddr, c.HTTPToken = r.ReadyProbe, r.HTTPAddr, r.HTTPToken

	for t := range strings.SplitSeq(r.Triggers, ",") {
		if strings.TrimSpace(t) == "" {
			continue
		}
		s, err := signals.Parse(t)
		if err == nil && !signals.Forwardable(s) {
			err = fmt.Errorf("%s cannot be a trigger", signals.Name(s))
		}
		if err != nil {
			bad("triggers", r.Triggers, err)
			break
		}
		c.Triggers = append(c.Triggers, s)
	}
	if len(c.Triggers) == 0 && r.Triggers != "" && usable("triggers") {
		// Only blanks and commas (a template that rendered nothing): `--triggers=` says "none"
		// on purpose, this most likely does not, and SIGTERM would reach the app at once.
		bad("triggers", r.Triggers, errors.New("names no signal: nothing but /prestop would start the stop sequence, and SIGTERM would be passed on at once (unset it for TERM,INT; --triggers= for none)"))
	}
	if r.StopSignal != "" {
		s, err := signals.Parse(r.StopSignal)
		if err == nil && !signals.Forwardable(s) && s != signals.SIGKILL && s != signals.SIGSTOP {
			// The platform stops the container with it, and drainit never gets it as a signal
			// of its own: the stop would start nothing, and the app be killed at the deadline.
			err = fmt.Errorf("%s cannot be a trigger, and the stop signal is always one: a stop with it would start nothing", signals.Name(s))
		}
		if err != nil {
			bad("stop-signal", r.StopSignal, err)
		}
		c.StopSignal = s
		if err == nil && signals.Forwardable(s) && !slices.Contains(c.Triggers, s) {
			c.Triggers = append(c.Triggers, s) // see Config.Triggers
		}
	}
	if len(c.Triggers) == 0 && r.Triggers == "" && v.Settings["triggers"].Seen {
		what := "only a /prestop request starts the stop sequence"
		if r.HTTPAddr == "" {
			what = "nothing starts the stop sequence (no --http-addr for /prestop either)"
		}
		c.notes = append(c.notes, fmt.Sprintf("%s is empty and there is no --stop-signal: %s; SIGTERM and SIGINT are passed on to the app at once", c.OptionName("triggers"), what))
	}
	if choice("forward", r.Forward, r.Forward, "group", "child") == "child" {
		c.Forward = ForwardChild
	}
	var err error
	if c.Rewrite, err = signals.ParseRewrite(r.Rewrite); err != nil {
		bad("rewrite", r.Rewrite, err)
	}
	if c.ExitMap, err = signals.ParseExitMap(r.ExitMap); err != nil {
		bad("exit-map", r.ExitMap, err)
	}
	// SIGSTOP for the stop step suspends the app instead: it would hang, frozen with its
	// connections open, until the SIGKILL at the deadline. A trigger the rewrite drops (TERM:0)
	// stops nothing either: the app would wait for the same SIGKILL, not knowing it is stopped.
	// One rule for both.
	const frozen = "suspends the app rather than stopping it: it would wait frozen for the SIGKILL at the deadline (TERM stops it gracefully, KILL at once)"
	// stopless says what the app would get instead of a stop signal, and what then: "" if a stop.
	stopless := func(to syscall.Signal, ok bool) (what, then string) {
		switch {
		case !ok:
			return "no signal", " (the rewrite drops it): it would wait for the SIGKILL at the deadline (TERM stops it gracefully, KILL at once)"
		case to == signals.SIGSTOP:
			return "SIGSTOP", ", which " + frozen
		}
		return "", ""
	}
	if c.StopSignal == signals.SIGSTOP {
		bad("stop-signal", r.StopSignal, errors.New("SIGSTOP "+frozen))
	} else if c.StopSignal == 0 {
		for _, t := range c.Triggers {
			if what, then := stopless(c.Rewrite.Apply(t)); what != "" {
				bad("rewrite", r.Rewrite, fmt.Errorf("%s is a trigger, so the app would get %s at the stop step%s", signals.Name(t), what, then))
				break
			}
		}
		// A /prestop that no signal follows stops the app as the runtime's SIGTERM would have,
		// through --rewrite (supervisor: enterStopping), trigger or not.
		if what, then := stopless(c.Rewrite.Apply(signals.SIGTERM)); what != "" && r.HTTPAddr != "" && !slices.Contains(c.Triggers, signals.SIGTERM) {
			bad("rewrite", r.Rewrite, fmt.Errorf("after a /prestop that no signal follows, the app gets SIGTERM rewritten, so %s%s", what, then))
		}
	}
	if r.LogFormat != "" {
		c.LogFormat = choice("log-format", r.LogFormat, r.LogFormat, "json", "console")
	}
	// In any case, as the stop signal's name, and "warning" as syslog and Python spell it.
	level := strings.ToLower(strings.TrimSpace(r.LogLevel))
	if level == "warning" {
		level = "warn"
	}
	c.LogLevel = choice("log-level", r.LogLevel, level, "debug", "info", "warn", "error")

	if usable("drain", "drain-max") && c.Adaptive && c.DrainMax == 0 {
		// The adaptive drain ends at its maximum: 0 is no drain at all, and so no adaptive one.
		bad("drain-max", r.DrainMax, fmt.Errorf("must be more than 0 with %s adaptive, whose drain it bounds (for no drain, %s 0 without %s adaptive)",
			c.OptionName("drain"), c.OptionName("drain-delay"), c.OptionName("drain")))
	}
	if usable("drain", "drain-min", "drain-max") && c.Adaptive && c.DrainMin > c.DrainMax {
		v.Errors = append(v.Errors, &Error{Option: c.OptionName("drain-min"), Flag: "drain-min", Value: r.DrainMin, Err: fmt.Errorf(
			"the minimum %s exceeds --drain-max %s", c.DrainMin, c.DrainMax)})
	}
	quiet, most := v.Settings["drain-quiet"], v.Settings["drain-max"]
	if usable("drain") && c.Adaptive && !c.DrainQuietAuto && !quiet.Bad && !most.Bad && (quiet.Seen || most.Seen) && c.DrainQuiet >= c.DrainMax {
		c.notes = append(c.notes, fmt.Sprintf("%s %s is not less than %s %s: no silence that long fits in the drain, which always runs to its maximum",
			c.OptionName("drain-quiet"), c.DrainQuiet, c.OptionName("drain-max"), c.DrainMax))
	}
	// An option of the adaptive drain is not used by the fixed one (DRAINIT_DRAIN_QUIET=auto alone
	// leaves the fixed 5 s drain): the log says so at start. Not the other way round: the adaptive
	// drain falls back to --drain-delay when the app's connections cannot be watched.
	if usable("drain") && !c.Adaptive {
		for _, f := range []string{"drain-quiet", "drain-watch", "drain-min", "drain-max", "drain-ports"} {
			if p.from[f] != "" {
				c.notes = append(c.notes, fmt.Sprintf("%s has no effect: %s is fixed, and it applies to %s adaptive only",
					p.from[f], c.OptionName("drain"), c.OptionName("drain")))
			}
		}
	}
	if b := c.Budget(); usable("drain", "grace-period", b.DrainFlag, "kill-margin") && b.KillAt <= b.Drain {
		// Name the option the user actually set (the one to fix), grace period first.
		flagName := "grace-period"
		for _, f := range []string{"grace-period", b.DrainFlag, "kill-margin"} {
			if p.from[f] != "" {
				flagName = f
				break
			}
		}
		v.Errors = append(v.Errors, &Error{Option: c.OptionName(flagName), Flag: flagName, Value: *r.field(flagName), Err: fmt.Errorf(
			"grace period %s leaves the app no time to stop: it must exceed %s %s + kill margin %s",
			c.GracePeriod, strings.ReplaceAll(b.DrainFlag, "-", " "), b.Drain, c.KillMargin)})
	}
	if len(c.Command) == 0 && !p.hidden {
		v.Errors = append(v.Errors, &Error{Err: ErrNoCommand})
	}

	// The values the run hands to the hooks package, read here, so that a mistake is refused
	// with the others and drainit check finds it too. A hook option given twice is refused
	// whatever its values (even unseen ones): which one would run is the mistake.
	for _, spec := range hookSpecs {
		if vs := p.given[spec.Flag()]; len(vs) > 1 {
			bad(spec.Flag(), vs[len(vs)-1], fmt.Errorf(
				"given %d times, but a hook option holds one command or call (run several from one script)", len(vs)))
			continue
		}
		h, ok := c.Hooks[spec]
		if !ok {
			continue
		}
		var err error
		if spec.Kind == HookExec {
			h.Argv, err = ParseCommand(h.Spec)
		} else {
			h.Call, err = ParseCall(h.Spec)
		}
		if err != nil {
			bad(spec.Flag(), h.Spec, fmt.Errorf("%s hook %q: %w", spec.Kind, spec.Flag(), err))
		}
		c.Hooks[spec] = h
	}
	if r.ReadyProbe != "" {
		if probe, err := ParseProbe(r.ReadyProbe); err != nil {
			bad("ready-probe", r.ReadyProbe, err)
		} else {
			c.Probe = &probe
		}
	}
	if r.HTTPAddr != "" {
		if err := checkListenAddr(r.HTTPAddr); err != nil {
			bad("http-addr", r.HTTPAddr, err)
		} else if c.Probe != nil && reachesListener(c.Probe.Addr(), r.HTTPAddr) {
			bad("ready-probe", r.ReadyProbe, fmt.Errorf("that is drainit's own control server (%s %q), not the app",
				c.OptionName("http-addr"), r.HTTPAddr))
		}
	}
	if usable("http-token") {
		tok, trimmed, err := CleanToken(r.HTTPToken)
		if err != nil {
			bad("http-token", r.HTTPToken, err)
		}
		c.HTTPToken = tok
		if trimmed || p.trimmed["http-token"] && err == nil {
			c.notes = append(c.notes, fmt.Sprintf(
				"%s: the whitespace around the token is not part of it (a Secret made from a file keeps the file's last newline): clients send \"Authorization: Bearer TOKEN\" without it",
				c.OptionName("http-token")))
		}
	}
	return v
}

// quoteAll is an option's values as shown, quoted and comma-separated, for messages.
func quoteAll(flagName string, values []string) string {
	q := make([]string, len(values))
	for i, s := range values {
		q[i] = strconv.Quote(shown(flagName, s))
	}
	return strings.Join(q, ", ")
}

// MaxTokenBytes bounds the control server's token: half of what the server reads of a request's
// head (MaxHeaderBytes), the rest being left for the request line and the other header
// fields a client sends (the kubelet's httpGet adds its own and the pod's httpHeaders). A random
// token needs 32 bytes; a JWT is rarely over 2 KiB.
const MaxTokenBytes = MaxHeaderBytes / 2

// space is the whitespace removed around every option's value, and CleanToken's around a token:
// a file's final newline (CRLF from some editors), a pasted space.
const space = " \t\r\n\v\f"

// trimValue is the one rule for the whitespace around a value, of a flag or a variable alike: it
// is removed (docs/options.md). A value of whitespace only is left as it is, for its option to
// refuse or take: DRAINIT_TRIGGERS=" " names no signal, which is not what --triggers= (none) says.
func trimValue(s string) string {
	if t := strings.Trim(s, space); t != "" {
		return t
	}
	return s
}

// CleanToken is the control server's token as drainit and drainit prestop both use it, so that
// the two always agree. An HTTP header's value cannot begin or end with whitespace (the server
// strips it), so the whitespace around it is removed, and trimmed says so; a token no client can
// send is an error, which says why.
func CleanToken(s string) (token string, trimmed bool, err error) {
	token = strings.Trim(s, space)
	if s != "" && token == "" {
		return "", false, errors.New("the token is only whitespace: /prestop and /status would need no token at all")
	}
	if len(token) > MaxTokenBytes {
		return "", false, fmt.Errorf("the token is %d bytes, over %d: with the rest of a request's head it would pass the %d bytes drainit's control server reads of one (it answers 431), and no request could carry it",
			len(token), MaxTokenBytes, MaxHeaderBytes)
	}
	for i := 0; i < len(token); i++ {
		switch b := token[i]; {
		case b == ' ' || b == '\t':
			return "", false, fmt.Errorf("whitespace inside the token (byte %d of %d): a bearer token is one word", i+1, len(token))
		case b < 0x20 || b == 0x7f:
			return "", false, fmt.Errorf("control character 0x%02x inside the token (byte %d of %d): an HTTP header cannot carry it", b, i+1, len(token))
		}
	}
	return token, token != s, nil
}

// checkListenAddr finds the mistakes in a TCP listen address that net.Listen refuses whatever
// the system (no port, a numeric port out of range), with net.Listen's own error, and refuses a
// service name for the port ("http-alt"): net.Listen looks it up in /etc/services, which a
// scratch or distroless image does not have, and `drainit prestop`, which dials the same
// address, takes a number only. What depends on the system (a host name, a port in use) is left
// to net.Listen at start.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && port != "" {
		// As net reads a port: an optional sign, then digits; anything else is a service name.
		digits, neg := port, false
		if digits[0] == '+' || digits[0] == '-' {
			digits, neg = digits[1:], digits[0] == '-'
		}
		if strings.Trim(digits, "0123456789") != "" {
			return fmt.Errorf("port %q is not a number: give the port's number (a service name needs /etc/services, which an image built FROM scratch lacks)", port)
		}
		n, perr := strconv.ParseUint("0"+digits, 10, 64)
		if perr != nil || n > 65535 || (neg && n > 0) {
			err = &net.AddrError{Err: "invalid port", Addr: port}
		}
	}
	if err != nil {
		if addr != "" && strings.Trim(addr, "0123456789") == "" {
			// A port alone, as --port flags take it: the address needs its colon.
			return fmt.Errorf("listen tcp: address %s: missing port in address (a port alone is \":%s\")", addr, addr)
		}
		return &net.OpError{Op: "listen", Net: "tcp", Err: err}
	}
	// What net.Listen takes but drainit prestop, dialling the same address, could not.
	switch {
	case port == "":
		return errors.New("no port: net.Listen would take a random one, which neither the kubelet nor drainit prestop can find (was $PORT empty?)")
	case port[0] == '+' || port[0] == '-':
		return fmt.Errorf("port %q: give the port's number without a sign", port)
	case strings.Contains(host, "%"):
		return fmt.Errorf("host %q: an IPv6 zone is not taken: drainit prestop could not dial it", host)
	}
	return nil
}

// reachesListener reports whether a connection to dial (HOST:PORT) from inside the container
// lands on a listener at listen: the same port, and a probe host that is the listener's own, or
// local (empty, loopback, localhost, unspecified) while the listener is on loopback or on every
// address. A ready probe aimed at drainit's control server passes at once (tcp://, /healthz)
// or never (/readyz), whatever the app does.
func reachesListener(dial, listen string) bool {
	dh, dp, err1 := net.SplitHostPort(dial)
	lh, lp, err2 := net.SplitHostPort(listen)
	dn, errd := strconv.Atoi(dp)
	ln, errl := strconv.Atoi(lp)
	if err1 != nil || err2 != nil || errd != nil || errl != nil || dn != ln || ln == 0 {
		return false // as numbers: a probe at port 08099 reaches a listener at 8099
	}
	// Names and empty or unspecified addresses that mean this system; a loopback address is one
	// only where the other side is not an address of its own (127.0.0.1 and ::1 are two).
	anyLocal := func(h string) bool {
		ip := net.ParseIP(strings.TrimSuffix(h, "."))
		return h == "" || IsLocalhost(h) || ip != nil && ip.IsUnspecified()
	}
	loopback := func(h string) bool { ip := net.ParseIP(h); return ip != nil && ip.IsLoopback() }
	if dip, lip := net.ParseIP(dh), net.ParseIP(lh); dip != nil && lip != nil && dip.Equal(lip) || strings.EqualFold(dh, lh) {
		return true
	}
	return anyLocal(dh) && (anyLocal(lh) || loopback(lh)) || loopback(dh) && anyLocal(lh)
}

// ParseDuration's errors for a duration it read but cannot take, as opposed to one it could not
// read (see outOfRange).
var (
	errNegative = errors.New("not a duration from 0 up")
	errTooLong  = errors.New("too long (at most 2562047h)") // time.Duration's range: 292 years
	errTooShort = errors.New("shorter than a nanosecond, which would read as 0")
)

// outOfRange is whether err is one of ParseDuration's errors for a duration it could read.
func outOfRange(err error) bool {
	return errors.Is(err, errNegative) || errors.Is(err, errTooLong) || errors.Is(err, errTooShort)
}

// ParseDuration reads a Go duration ("500ms", "1m30s") or a bare number of seconds ("30",
// "0.5"), as pod specs write them, with the whitespace around it removed. Negative durations are
// an error, and so is a sign or an exponent ("+30s", "1e2"): no spec writes one, and a plus was
// taken in the durations only, where the lists and the names refused it.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.Trim(s, space)
	if t == "" {
		return 0, errors.New("empty duration")
	}
	notDuration := errors.New("not a duration (use 30s, 500ms or a number of seconds)")
	if t[0] == '+' {
		return 0, notDuration
	}
	// A number of seconds: digits with one point at most; a minus only to be refused as negative
	// (ParseFloat also reads exponents, "1e2", hexadecimal, "0x1p5", underscores, "1_0", and
	// infinities, which no spec means).
	digits := strings.TrimPrefix(t, "-")
	decimal := digits != "" && strings.Trim(digits, "0123456789.") == "" && strings.Count(digits, ".") <= 1 && digits != "."
	if f, err := strconv.ParseFloat(t, 64); decimal && err == nil {
		switch {
		case f < 0:
			return 0, errNegative
		case f > float64(math.MaxInt64/int64(time.Second)): // whole seconds: f·1e9 cannot round past it
			return 0, errTooLong
		case f > 0 && f*float64(time.Second) < 1:
			return 0, errTooShort
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(t)
	if err == nil && d == 0 && strings.ContainsAny(t, "123456789") {
		return 0, errTooShort // "0.5ns": not 0, which means none
	}
	switch {
	case err != nil && durationSyntax(t):
		// time.ParseDuration says "invalid duration" of one that overflows too.
		if t[0] == '-' {
			return 0, errNegative
		}
		return 0, errTooLong
	case err != nil:
		return 0, notDuration
	case d < 0:
		return 0, errNegative
	}
	return d, nil
}

// durationSyntax is whether s is written as time.ParseDuration reads a duration: a sign, then
// numbers (digits, a point, digits) each with a unit. It does not look at the size: every digit
// is read as 0, which cannot overflow, and a bare 0, signed or not, which ParseDuration takes,
// needs a unit.
func durationSyntax(s string) bool {
	zeroed := strings.Map(func(r rune) rune {
		if r >= '1' && r <= '9' {
			return '0'
		}
		return r
	}, s)
	_, err := time.ParseDuration(zeroed)
	return err == nil && strings.TrimLeft(zeroed, "+-") != "0"
}
