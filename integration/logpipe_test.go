package integration

import (
	"syscall"
	"testing"
	"time"
)

// TestLogReaderGoneDrainitCarriesOn: drainit's stderr is a pipe whose reader goes away after
// the first line (a log collector restarted, `drainit … 2>&1 | tee` whose tee died). drainit must
// outlive its log: the stop sequence still runs (the app gets SIGTERM after the drain delay) and
// drainit exits with the app's status, where the Go runtime's default for a write to a broken
// stderr would end it with SIGPIPE (as PID 1: status 2) and leave the app unstopped.
func TestLogReaderGoneDrainitCarriesOn(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		const drain = 300 * time.Millisecond
		d := start(t, spec{mode: m, logGone: true, app: app("signals"),
			args: []string{"--drain-delay", drain.String(), "--grace-period", "10s", "--log-format", "json"}})
		d.stderr.AwaitContains(t, waitTimeout, "app started") // and then nothing: the pipe is closed
		d.stdout.AwaitPrefix(t, waitTimeout, "ready app")
		sent := time.Now()
		d.signal(syscall.SIGTERM)
		got := d.stdout.AwaitContains(t, waitTimeout, "got app SIGTERM")
		if after := got.At.Sub(sent); after < drain-25*time.Millisecond {
			t.Errorf("the app got SIGTERM %s after drainit did, before the %s drain delay", after, drain)
		}
		if st := d.wait(waitTimeout); st != (exitStatus{code: 0}) {
			t.Errorf("drainit: %v, want exit 0 (the app's status) with its log's reader gone\n%s", st, d.dump())
		}
	})
}
