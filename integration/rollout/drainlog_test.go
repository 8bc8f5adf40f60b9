package rollout

import (
	"testing"
	"time"
)

func TestParseDrainLog(t *testing.T) {
	// Lines as drainit writes them (the app's own output interleaved), trimmed.
	out := []byte(`{"level":"info","logger":"drainit","pid":7,"message":"app started"}
ready app 7 127.0.0.2:40000
{"level":"info","logger":"drainit","phase":"draining","elapsed":0,"drain_max":15000,"message":"draining until no new connections arrive: the app keeps serving"}
{"level":"info","logger":"drainit","phase":"draining","elapsed":2011,"reason":"quiet","new_connections":25,"method":"sock-diag","listeners":1,"drained":2011,"message":"adaptive drain over"}
{"level":"info","logger":"drainit","phase":"drained","elapsed":2011,"message":"drained; waiting for the stop signal"}
`)
	got := parseDrainLog(out)
	want := DrainLog{Reason: "quiet", NewConns: 25, Method: "sock-diag", Drained: 2.011}
	if got == nil || *got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	// --drain-quiet auto: the rate, the silence it needed and waited, the history, drainit's CPU;
	// and why a drain waited for its maximum.
	auto := []byte(`{"level":"info","phase":"draining","reason":"quiet","new_connections":210,"method":"passive-opens","silence":104,"cpu":15,"cpu_share":0.0125,"rate":198.4,"rate_arrivals":20,"rate_window":96,"silence_needed":100,"history":true,"drained":1200,"time":"2026-12-02T14:34:54.221Z","message":"adaptive drain over"}`)
	needed := Seconds(0.1)
	got = parseDrainLog(auto)
	if got == nil || !got.Auto || got.Rate != 198.4 || got.SilenceNeeded == nil || *got.SilenceNeeded != needed || got.Silence != 0.104 ||
		!got.History || got.CPU != 0.015 || got.CPUShare != 0.0125 || got.Drained != 1.2 ||
		!got.End.Equal(time.Date(2026, 12, 2, 14, 34, 54, 221e6, time.UTC)) {
		t.Fatalf("auto: got %+v", got)
	}
	atMax := []byte(`{"reason":"max","new_connections":3,"method":"passive-opens","silence":14000,"rate":0,"rate_arrivals":3,"silence_needed":0,"history":true,"why":"3 new connections in 30s: too few","drained":15000,"message":"adaptive drain over"}`)
	if got := parseDrainLog(atMax); got == nil || !got.Auto || got.SilenceNeeded != nil || got.Why != "3 new connections in 30s: too few" {
		t.Fatalf("auto at its maximum: got %+v", got)
	}

	fallback := []byte(`{"level":"warn","phase":"draining","error":"no listening socket","drain_delay":5000,"message":"cannot watch the app's connections: falling back to the fixed drain delay"}`)
	if got := parseDrainLog(fallback); got == nil || got.Reason != "fallback" {
		t.Fatalf("fallback: got %+v", got)
	}

	fixed := []byte(`{"level":"info","phase":"draining","elapsed":0,"message":"draining: the app keeps serving"}
not json {"message":"adaptive drain over"}
{"message":"adaptive drain over"`)
	if got := parseDrainLog(fixed); got != nil {
		t.Fatalf("a log without an adaptive drain: got %+v", got)
	}
}
