package rollout

import (
	"reflect"
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
	if len(got) != 6 {
		t.Fatalf("%d default scenarios, want the issue's 6", len(got))
	}
	if _, err := Lookup([]string{"bare-naive", "nope"}); err == nil {
		t.Fatal("Lookup accepted an unknown scenario")
	}
}
