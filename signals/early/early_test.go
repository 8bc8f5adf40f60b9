//go:build linux

package early

import (
	"os"
	"os/signal"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A storm of exiting children cannot crowd the other signals out: SIGCHLD never enters the
// channel they wait in, where os/signal would drop a SIGTERM once the channel was full.
func TestNotifyKeepsSIGCHLDApart(t *testing.T) {
	r := Take()
	r.Wait()
	chld, sigs := r.Chld, r.Sigs
	defer signal.Reset()
	kill := func(sig unix.Signal) {
		t.Helper()
		if err := unix.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(5 * time.Second)
	// os/signal hands each signal to every channel registered for it before it takes the next
	// signal: once SIGCHLD is on its own channel and USR1, sent after, has arrived, a SIGCHLD
	// meant for sigs would have arrived there first.
	kill(unix.SIGCHLD)
	select {
	case <-chld:
	case <-deadline:
		t.Fatal("no SIGCHLD on its own channel")
	}
	kill(unix.SIGUSR1)
	await(t, sigs, unix.SIGUSR1, deadline)

	// And the point of it: a SIGTERM after a storm of them is received.
	for range 4 * cap(sigs) {
		kill(unix.SIGCHLD)
	}
	kill(unix.SIGTERM)
	await(t, sigs, unix.SIGTERM, deadline)
}

// await reads sigs until want arrives, failing on a SIGCHLD or at the deadline.
func await(t *testing.T, sigs <-chan os.Signal, want unix.Signal, deadline <-chan time.Time) {
	t.Helper()
	for {
		select {
		case s := <-sigs:
			switch s {
			case unix.SIGCHLD:
				t.Fatal("SIGCHLD arrived on the channel of the other signals")
			case want:
				return
			}
		case <-deadline:
			t.Fatalf("no %v", want)
		}
	}
}
