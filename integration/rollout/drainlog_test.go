package rollout

import "testing"

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
