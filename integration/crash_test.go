package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// TestCrashRunsOfflineHooks: the app exits on its own, with no stop requested. Once its ready
// probe had passed it may have been registered (the online hooks run from then on), and the
// offline hooks, which deregister it, run before the post-stop hooks; drainit exits with the
// app's status. A crash used to leave the registration pointing at a dead app. An app whose
// probe never passed was never registered: only the post-stop hooks run. What the app left
// behind is ended between the two.
func TestCrashRunsOfflineHooks(t *testing.T) {
	healthy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer healthy.Close()
	eachMode(t, func(t *testing.T, m mode) {
		for _, inService := range []bool{true, false} {
			t.Run(fmt.Sprintf("in-service=%v", inService), func(t *testing.T) {
				dir := t.TempDir()
				record, crash := filepath.Join(dir, "hooks"), filepath.Join(dir, "crash")
				probe := healthy.URL + "/healthz"
				if !inService {
					probe = "tcp://" + testenv.FreeLoopbackAddr(t) // nothing listens there
				}
				hook := func(line string) string {
					return fmt.Sprintf(`["/bin/sh","-c",%q]`, line+" >> "+record)
				}
				d := startIn(t, m, []string{"--ready-probe", probe, "--grace-period", "20s",
					// The offline hook takes a while: the post-stop hook must still come after it.
					"--offline-exec", hook("sleep 0.3; echo offline"), "--post-stop-exec", hook("echo post-stop")},
					// The app leaves a process behind: drainit ends it after the offline hooks, not
					// meanwhile (a SIGTERM to everything would reach the hook too).
					"/bin/sh", "-c", fmt.Sprintf("sleep 1h & while [ ! -e %s ]; do sleep 0.01; done; exit 7", crash))
				if inService {
					d.stderr.AwaitContains(t, waitTimeout, "app ready")
				}
				if err := os.WriteFile(crash, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if got := d.wait(waitTimeout); got != (exitStatus{code: 7}) {
					t.Fatalf("drainit: %v, want the app's exit 7\n%s", got, d.dump())
				}
				got, err := os.ReadFile(record)
				if err != nil {
					t.Fatalf("no hook ran: %v\n%s", err, d.dump())
				}
				want := "offline\npost-stop\n"
				if !inService {
					want = "post-stop\n"
				}
				if string(got) != want {
					t.Fatalf("hooks ran as %q, want %q\n%s", got, want, d.dump())
				}
			})
		}
	})
}
