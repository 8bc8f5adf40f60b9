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
		if l7 := slices.Contains(L7Keys(), s.Key); s.Pooled != l7 {
			t.Errorf("%s: pooled L7 proxies %v, want %v", s.Key, s.Pooled, l7)
		}
	}
	wantArgs := map[string]string{
		"drainit-auto":     "--drain adaptive --drain-quiet auto",
		"drainit-adaptive": "--drain adaptive --drain-quiet 1s",
		"drainit-fixed5":   "--drain fixed --drain-delay 5s",
		"drainit-fixed10":  "--drain fixed --drain-delay 10s",
		"l7-connections":   "--drain adaptive --drain-quiet 1s",
		"l7-requests":      "--drain adaptive --drain-quiet 1s --drain-watch requests",
	}
	if len(ss) != len(wantArgs) {
		t.Fatalf("%d drain scenarios, want %d", len(ss), len(wantArgs))
	}
	byKey := map[string]Scenario{}
	for _, s := range ss {
		byKey[s.Key] = s
		if got := strings.Join(s.DrainitArgs(time.Second), " "); got != wantArgs[s.Key] {
			t.Errorf("%s: drainit %s, want %s", s.Key, got, wantArgs[s.Key])
		}
	}
	for _, p := range []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second} {
		c := byKey["drainit-adaptive"].Claim(Cell{Propagation: p})
		if c.Expect != ExpectNoLoss || c.MaxStop != p+1500*time.Millisecond {
			t.Errorf("adaptive at %s: claim %+v, want no loss and stop <= %s", p, c, p+1500*time.Millisecond)
		}
		// Behind a pooling L7 proxy: counting requests claims what counting connections claims
		// behind an L4 one; counting connections claims nothing (it sees no traffic there).
		if c := byKey["l7-requests"].Claim(Cell{Propagation: p}); c.Expect != ExpectNoLoss || c.MaxStop != p+1500*time.Millisecond || c.Outside != "" {
			t.Errorf("L7 requests at %s: claim %+v, want no loss and stop <= %s", p, c, p+1500*time.Millisecond)
		}
		if c := byKey["l7-connections"].Claim(Cell{Propagation: p}); c.Outside == "" || c.Expect != NoExpectation || c.MaxStop != 0 {
			t.Errorf("L7 connections at %s: claim %+v, want none, outside the model", p, c)
		}
		if c := byKey["drainit-fixed5"].Claim(Cell{Propagation: p}); c.MaxStop != 0 {
			t.Errorf("fixed at %s: claim %+v, want no stop bound", p, c)
		}
		// Issue 40's targets: every stop within the last proxy's delay + 0.6 s from 200 new
		// connections a second at the pod, the median within + 1.2 s below (and without a
		// cell rate).
		for rate, slack := range map[float64]time.Duration{200: AutoFastSlack, 2000: AutoFastSlack} {
			c := byKey["drainit-auto"].Claim(Cell{Propagation: p, Rate: rate})
			if c.Expect != ExpectNoLoss || c.MaxStop != p+slack || c.MedianStop != 0 || c.Outside != "" {
				t.Errorf("auto at %s, %.0f/s: claim %+v, want no loss and every stop <= %s", p, rate, c, p+slack)
			}
		}
		for _, rate := range []float64{0, 20} {
			c := byKey["drainit-auto"].Claim(Cell{Propagation: p, Rate: rate})
			if c.Expect != ExpectNoLoss || c.MaxStop != 0 || c.MedianStop != p+AutoSlowSlack || c.Outside != "" {
				t.Errorf("auto at %s, %.0f/s: claim %+v, want no loss and the median stop <= %s", p, rate, c, p+AutoSlowSlack)
			}
		}
	}
	// With proxies: the bound counts from the last one's delay; the straggler is outside the
	// automatic quiet period's model, and the scenario claims nothing there.
	for _, top := range Topologies() {
		cell := TopologyCell(top, 200)
		c := byKey["drainit-auto"].Claim(cell)
		switch top.Name {
		case "straggler":
			if cell.Propagation != 4*time.Second || c.Outside == "" || c.Expect != NoExpectation || c.MaxStop != 0 {
				t.Errorf("auto with a straggler (%s): claim %+v, want none, outside the model", cell, c)
			}
		default:
			if cell.Propagation != 2500*time.Millisecond || c.Expect != ExpectNoLoss || c.MaxStop != cell.Propagation+AutoFastSlack {
				t.Errorf("auto at %s: claim %+v", cell, c)
			}
		}
		if c := byKey["drainit-adaptive"].Claim(cell); c.Outside != "" || c.Expect != ExpectNoLoss {
			t.Errorf("quiet 1s at %s: claim %+v, want no loss", cell, c)
		}
	}
}

// The proxy topologies of issue 16: shares add up to 1, the cell's propagation is the last
// proxy's delay, the largest share comes first, and the table names the delays.
func TestTopologies(t *testing.T) {
	for _, top := range Topologies() {
		sum := 0.0
		for _, p := range top.Proxies {
			sum += p.Share
		}
		if sum < 0.999 || sum > 1.001 {
			t.Errorf("%s: shares add up to %v", top.Name, sum)
		}
		ps, err := TopologyCell(top, 20).proxies()
		if err != nil || len(ps) != len(top.Proxies) || ps[0].Share < ps[len(ps)-1].Share {
			t.Errorf("%s: proxies %+v, %v", top.Name, ps, err)
		}
	}
	if got := TopologyCell(Topologies()[1], 0).String(); got != "straggler (0.3s,1s,2.5s,4s 2%)" {
		t.Errorf("straggler cell %q", got)
	}
	if _, err := LookupTopology("mesh"); err == nil {
		t.Error("an unknown topology was found")
	}
	if ps, err := (Cell{Propagation: time.Second}).proxies(); err != nil || len(ps) != 1 || ps[0] != (Proxy{time.Second, 1}) {
		t.Errorf("one proxy: %+v, %v", ps, err)
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
		{"drainit-auto", 3 * time.Second, ExpectNoLoss},
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
	if len(got) != 15 {
		t.Fatalf("%d default scenarios, want issue 5's 6, issues 6 and 16's 4, the L7 proxy's 2 and nginx's 3", len(got))
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
