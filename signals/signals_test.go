package signals

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]syscall.Signal{
		"TERM": SIGTERM, "sigterm": SIGTERM, "SIGTERM": SIGTERM, " hup ": SIGHUP,
		"15": SIGTERM, "1": SIGHUP, "64": 64, "USR1": SIGUSR1, "winch": SIGWINCH,
		"IOT": SIGABRT, "RTMIN": 34, "RTMIN+2": 36, "SIGRTMAX": 64, "RTMAX-4": 60,
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "65", "-1", "FOO", "SIG", "RTMIN-1", "RTMAX+1", "RTMIN+31", "TERM2"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, got)
		}
	}
}

func TestNameRoundTrip(t *testing.T) {
	for s := syscall.Signal(1); s <= MaxSignal; s++ {
		if s == 32 || s == 33 {
			continue // no portable name
		}
		got, err := Parse(Name(s))
		if err != nil || got != s {
			t.Errorf("Parse(Name(%d)=%q) = %v, %v", s, Name(s), got, err)
		}
	}
}

func TestForwardable(t *testing.T) {
	// The faults too: os/signal gets them only when sent, and one sent to drainit is meant for
	// the app (a core dump on ABRT).
	for _, s := range []syscall.Signal{SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2,
		SIGWINCH, SIGCONT, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU, 35, 64,
		SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT} {
		if !Forwardable(s) {
			t.Errorf("%s should be forwarded", Name(s))
		}
	}
	for _, s := range []syscall.Signal{0, SIGKILL, SIGSTOP, SIGCHLD, SIGURG, SIGPIPE, SIGPROF, 32, 33, 34, 65} {
		if Forwardable(s) {
			t.Errorf("%s should not be forwarded", Name(s))
		}
	}
	// What drainit registers for (CHLD, then Early and Late) is CHLD and every forwardable
	// signal, each once.
	seen := map[os.Signal]int{SIGCHLD: 1}
	for _, s := range append(Early(), Late()...) {
		seen[s]++
	}
	for s := syscall.Signal(1); s <= MaxSignal; s++ {
		want := 0
		if Forwardable(s) || s == SIGCHLD {
			want = 1
		}
		if seen[s] != want {
			t.Errorf("%s registered %d times, want %d", Name(s), seen[s], want)
		}
	}
	// Every signal whose sending ends a Go program that has not caught it is early: the faults
	// among them.
	for _, s := range append([]os.Signal{SIGABRT, SIGSTKFLT}, Faults()...) {
		if !slices.Contains(Early(), s) {
			t.Errorf("%s is not in Early: one sent before it is registered ends drainit", Name(s.(syscall.Signal)))
		}
	}
	if slices.Contains(Early(), os.Signal(SIGCHLD)) {
		t.Error("SIGCHLD is in Early: it must have a channel of its own")
	}
	for _, s := range []syscall.Signal{SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSTKFLT, SIGTSTP, SIGTTIN, SIGTTOU} {
		if !slices.Contains(Early(), os.Signal(s)) {
			t.Errorf("%s would end or stop drainit if it came before registration, but is not early", Name(s))
		}
	}
}

func TestParseRewrite(t *testing.T) {
	r, err := ParseRewrite("HUP:USR1, TERM=QUIT,WINCH:0,usr2:none,PWR:00,")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in   syscall.Signal
		out  syscall.Signal
		pass bool
	}{
		{SIGHUP, SIGUSR1, true}, {SIGTERM, SIGQUIT, true},
		{SIGWINCH, 0, false}, {SIGUSR2, 0, false}, {SIGPWR, 0, false}, {SIGINT, SIGINT, true},
	}
	for _, c := range cases {
		out, pass := r.Apply(c.in)
		if out != c.out || pass != c.pass {
			t.Errorf("Apply(%s) = %v, %v; want %v, %v", Name(c.in), out, pass, c.out, c.pass)
		}
	}
	if r, err := ParseRewrite(""); err != nil || len(r) != 0 {
		t.Errorf(`ParseRewrite("") = %v, %v`, r, err)
	}
	for _, bad := range []string{"HUP", "HUP:FOO", "FOO:HUP", "CHLD:HUP", "HUP:USR1,HUP:USR2", ":"} {
		if _, err := ParseRewrite(bad); err == nil {
			t.Errorf("ParseRewrite(%q) succeeded, want an error", bad)
		} else if !strings.Contains(err.Error(), "entry") {
			t.Errorf("ParseRewrite(%q) error %q does not name the entry", bad, err)
		}
	}
}

func TestParseExitMap(t *testing.T) {
	m, err := ParseExitMap("143:0,130=0, 1 : 3")
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[int]int{143: 0, 130: 0, 1: 3, 0: 0, 2: 2} {
		if got := m.Apply(in); got != want {
			t.Errorf("Apply(%d) = %d, want %d", in, got, want)
		}
	}
	for _, bad := range []string{"143", "143:x", "256:0", "0:256", "-1:0", "1:0,1:2"} {
		if _, err := ParseExitMap(bad); err == nil {
			t.Errorf("ParseExitMap(%q) succeeded, want an error", bad)
		}
	}
}
