package kubelet

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testbin"
)

// These tests check the simulator itself against plain processes (the test binary re-run as a
// helper), so that the scenario tests can trust what it records.

func TestMain(m *testing.M) {
	switch os.Getenv("KUBELET_TEST_HELPER") {
	case "exit-on-term":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		os.Stdout.WriteString("ready\n")
		<-ch
		os.Exit(0)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		os.Stdout.WriteString("ready\n")
		select {}
	}
	bins, binsErr = testbin.Build()
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

func startHelper(t *testing.T, mode string) Container {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KUBELET_TEST_HELPER="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil { // "ready\n": the handler is installed
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return Container{PID: cmd.Process.Pid, Exited: exited}
}

func TestPromptExitNoPreStop(t *testing.T) {
	r := Pod{Grace: 30 * time.Second}.Stop(startHelper(t, "exit-on-term"))
	if r.Killed || r.SignalAt.IsZero() || r.G != 30*time.Second {
		t.Fatalf("record %+v: want signalled, not killed, G = E", r)
	}
}

func TestKillAfterG(t *testing.T) {
	// No preStop and grace 1 s: G is raised to the 2 s minimum, then SIGKILL.
	r := Pod{Grace: time.Second}.Stop(startHelper(t, "ignore-term"))
	if !r.Killed || r.G != MinimumGracePeriod {
		t.Fatalf("record %+v: want killed after the 2 s minimum", r)
	}
	if got := r.ExitedAt.Sub(r.SignalAt); got < MinimumGracePeriod {
		t.Fatalf("SIGKILL came %v after the signal, before G", got)
	}
}

func TestPreStopTimeoutNotCancelledAndGFloor(t *testing.T) {
	// A hook that outlasts E: the kubelet stops waiting at E, signals, and gives the 2 s minimum.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "kube-lifecycle/1.34" {
			t.Errorf("User-Agent %q", r.Header.Get("User-Agent"))
		}
		<-release
	}))
	defer srv.Close()
	defer close(release)
	r := Pod{Grace: time.Second, PreStop: &PreStop{HTTPGet: srv.URL}}.Stop(startHelper(t, "exit-on-term"))
	if !r.PreStopTimedOut || r.G != MinimumGracePeriod || r.Killed {
		t.Fatalf("record %+v: want preStop timed out, G = 2s, not killed", r)
	}
	if w := r.PreStopEnd.Sub(r.Deleted); w < time.Second {
		t.Fatalf("kubelet stopped waiting after %v, before E", w)
	}
}

func TestPreStopStatusIgnoredAndGReduced(t *testing.T) {
	// A 500 is not a failure to the kubelet; a hook that took 1.x s takes 1 s off G.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1100 * time.Millisecond) // the hook's own duration, which is what is tested
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	r := Pod{Grace: 10 * time.Second, PreStop: &PreStop{HTTPGet: srv.URL}}.Stop(startHelper(t, "exit-on-term"))
	if r.PreStopErr != nil || r.PreStopTimedOut || r.G != 9*time.Second {
		t.Fatalf("record %+v: want hook ok despite 500, G = 10s - 1s", r)
	}
}

func TestExecPreStopFailureGoesOn(t *testing.T) {
	r := Pod{Grace: 5 * time.Second, PreStop: &PreStop{Exec: []string{"/bin/false"}}}.Stop(startHelper(t, "exit-on-term"))
	if r.PreStopErr == nil || r.SignalAt.IsZero() || r.Killed {
		t.Fatalf("record %+v: want a recorded failure and the stop going on", r)
	}
}
