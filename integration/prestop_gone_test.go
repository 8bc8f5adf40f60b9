package integration

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testenv"
)

// TestPrestopCallGoneThenSignal: the preStop hook is `drainit prestop --timeout 1s`, shorter than
// the drain (3 s): the hook gives up at 1 s, its call gone, and the kubelet, the hook done, sends
// SIGTERM with the pod's grace period nearly whole (29 s of 30 s). That signal says nothing of the
// grace period: drainit must not take it for its end (stop at once, SIGKILL 1 s later), but drain
// on and give the app its stop signal after the drain, as for any signal after a /prestop. The
// app takes 2 s to stop, which it has. Before, drainit SIGKILLed it at 2 s and exited 137.
//
// And the other way: with the hook's call still waiting (no --timeout), the same signal during
// the drain says the pod's grace period is over, and the app is stopped at once, not at the
// drain's end.
func TestPrestopCallGoneThenSignal(t *testing.T) {
	for _, gone := range []bool{true, false} {
		name := "waiting"
		if gone {
			name = "gone"
		}
		t.Run(name, func(t *testing.T) {
			ctl := testenv.FreeLoopbackAddr(t)
			d := startPID1(t, []string{"--log-format", "json", "--http-addr", ctl, "--grace-period", "30s", "--drain-delay", "3s"},
				app("slow-stop", "500ms")...)
			d.stdout.AwaitPrefix(t, waitTimeout, "ready app ")

			args := []string{"prestop", "--addr", ctl}
			if gone {
				args = append(args, "--timeout", "1s")
			}
			hook := exec.Command(drainitBin, args...)
			if err := hook.Start(); err != nil {
				t.Fatal(err)
			}
			hookDone := make(chan error, 1)
			go func() { hookDone <- hook.Wait() }()
			t.Cleanup(func() { _ = hook.Process.Kill(); <-hookDone })
			if gone {
				if err := <-hookDone; err == nil {
					t.Fatal("drainit prestop --timeout 1s returned 0 before a 3 s drain")
				}
				hookDone <- nil
			} else {
				// The call waits as long as the drain does: the signal comes during it.
				d.stderr.AwaitLine(t, waitTimeout, "the drain", lines.Containing(`"message":"draining: the app keeps serving"`))
			}
			d.signal(syscall.SIGTERM) // the kubelet's, once the hook has returned or its wait is over
			d.stderr.AwaitLine(t, waitTimeout, "the stop signal", lines.Containing(`"message":"stop signal sent"`))
			var t0, stop time.Time
			for _, e := range d.logs() {
				switch e.msg() {
				case "stop sequence started by /prestop":
					t0, _ = e.time()
				case "stop signal sent":
					stop, _ = e.time()
				}
			}
			if took := stop.Sub(t0); t0.IsZero() || gone && took < 2900*time.Millisecond || !gone && took >= 2900*time.Millisecond {
				t.Errorf("stop signal %s after the /prestop; want it at the 3 s drain's end with the call gone, at the signal (at once) with it waiting (gone: %v)\n%s", took, gone, d.dump())
			}
			if got := d.wait(waitTimeout); got.code != 0 || got.sig != 0 {
				t.Errorf("drainit: %v, want exit 0 (the app's)\n%s", got, d.dump())
			}
		})
	}
}
