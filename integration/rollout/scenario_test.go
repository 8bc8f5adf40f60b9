package rollout

import (
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// The drainit-default scenario's expectation rests on drainit's default drain delay.
func TestDrainitDefaultDrainMatchesConfig(t *testing.T) {
	f, ok := reflect.TypeOf(config.Raw{}).FieldByName("DrainDelay")
	if !ok {
		t.Fatal("config.Raw has no DrainDelay")
	}
	d, err := config.ParseDuration(f.Tag.Get("envDefault"))
	if err != nil {
		t.Fatal(err)
	}
	if d != DrainitDefaultDrain {
		t.Fatalf("drainit's default --drain-delay is %s, DrainitDefaultDrain %s", d, DrainitDefaultDrain)
	}
}

// The adaptive scenario's stop bound rests on drainit's default quiet period, and its grace
// period must leave room for drainit's default maximum drain (or drainit refuses to start).
func TestAdaptiveMatchesConfig(t *testing.T) {
	def := func(field string) time.Duration {
		t.Helper()
		f, ok := reflect.TypeOf(config.Raw{}).FieldByName(field)
		if !ok {
			t.Fatalf("config.Raw has no %s", field)
		}
		d, err := config.ParseDuration(f.Tag.Get("envDefault"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if q := def("DrainQuiet"); q != AdaptiveQuiet {
		t.Errorf("drainit's default --drain-quiet is %s, AdaptiveQuiet %s", q, AdaptiveQuiet)
	}
	if need := def("DrainMax") + def("KillMargin"); DrainGrace <= need {
		t.Errorf("DrainGrace %s leaves no room for --drain-max + --kill-margin = %s", DrainGrace, need)
	}
}

// The fixed and adaptive drains are compared on equal terms: httpGet preStop, same grace.
func TestDrainScenarios(t *testing.T) {
	ss, err := Lookup(DrainKeys())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.Init != Drainit || s.PreStop != HTTPPreStop || s.Grace != DrainGrace || s.Naive {
			t.Errorf("%s: %+v", s.Key, s)
		}
	}
	wantArgs := map[string]string{
		"drainit-adaptive": "--drain adaptive --drain-quiet 1s",
		"drainit-fixed5":   "--drain fixed --drain-delay 5s",
		"drainit-fixed10":  "--drain fixed --drain-delay 10s",
	}
	for _, s := range ss {
		if got := strings.Join(s.DrainitArgs(time.Second), " "); got != wantArgs[s.Key] {
			t.Errorf("%s: drainit %s, want %s", s.Key, got, wantArgs[s.Key])
		}
	}
	for _, p := range []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second} {
		c := ss[0].Claim(p)
		if c.Expect != ExpectNoLoss || c.MaxStop != p+1500*time.Millisecond {
			t.Errorf("adaptive at %s: claim %+v, want no loss and stop <= %s", p, c, p+1500*time.Millisecond)
		}
		if c := ss[1].Claim(p); c.MaxStop != 0 {
			t.Errorf("fixed at %s: claim %+v, want no stop bound", p, c)
		}
	}
}

func TestExpect(t *testing.T) {
	byKey := map[string]Scenario{}
	for _, s := range Scenarios() {
		byKey[s.Key] = s
	}
	tests := []struct {
		key  string
		p    time.Duration
		want Expectation
	}{
		{"bare-naive", 200 * time.Millisecond, NoExpectation},
		{"bare-naive", time.Second, ExpectLoss},
		{"bare-graceful", 3 * time.Second, ExpectLoss},
		{"tini", time.Second, ExpectLoss},
		{"dumb-init", time.Second, ExpectLoss},
		{"prestop-sleep", 3 * time.Second, ExpectNoLoss},
		{"prestop-sleep", 6 * time.Second, NoExpectation},
		{"drainit-prestop", 3 * time.Second, ExpectNoLoss},
		{"drainit-default", 3 * time.Second, ExpectNoLoss},
		{"drainit-default", 8 * time.Second, NoExpectation},
		{"drainit-adaptive", 3 * time.Second, ExpectNoLoss},
		{"drainit-fixed5", 3 * time.Second, ExpectNoLoss},
		{"drainit-fixed5", 6 * time.Second, NoExpectation},
		{"drainit-fixed10", 6 * time.Second, ExpectNoLoss},
	}
	for _, tt := range tests {
		s, ok := byKey[tt.key]
		if !ok {
			t.Fatalf("no scenario %s", tt.key)
		}
		if got := s.Expect(tt.p); got != tt.want {
			t.Errorf("%s at %s: %v, want %v", tt.key, tt.p, got, tt.want)
		}
	}
}

func TestLookup(t *testing.T) {
	got, err := Lookup(DefaultKeys())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 12 {
		t.Fatalf("%d default scenarios, want issue 5's 6, issue 6's 3 and nginx's 3", len(got))
	}
	if _, err := Lookup([]string{"bare-naive", "nope"}); err == nil {
		t.Fatal("Lookup accepted an unknown scenario")
	}
}

// The nginx scenarios are stopped the way the runtime stops an image FROM nginx: SIGQUIT and no
// preStop, so that behind drainit the SIGQUIT itself must start the drain (--stop-signal QUIT).
func TestNginxScenarios(t *testing.T) {
	ss, err := Lookup(NginxKeys())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.App != Nginx || s.StopSignal != syscall.SIGQUIT || s.PreStop != NoPreStop || s.Naive {
			t.Errorf("%s: %+v", s.Key, s)
		}
		switch s.Init {
		case Bare:
			if s.Expect(time.Second) != ExpectLoss {
				t.Errorf("%s: stopped at once at 1s propagation, but no loss expected", s.Key)
			}
		case Drainit:
			args := s.DrainitArgs(time.Second)
			if i := slices.Index(args, "--stop-signal"); i < 0 || i+1 >= len(args) || args[i+1] != "QUIT" {
				t.Errorf("%s: drainit %q: want --stop-signal QUIT", s.Key, args)
			}
			for _, p := range []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second} {
				if s.Expect(p) != ExpectNoLoss {
					t.Errorf("%s at %s: %v, want no loss", s.Key, p, s.Expect(p))
				}
			}
		default:
			t.Errorf("%s: init %v", s.Key, s.Init)
		}
	}
}
