package drainwatch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sidecarListener is a line of /proc/net/tcp: a listener on 0.0.0.0:15006 (inode 1500) that no
// process of the fake app holds, as a mesh sidecar's in the pod's network namespace, owned by
// uid (Istio's proxy runs as 1337).
func sidecarListener(uid int) string {
	return fmt.Sprintf("   9: 00000000:3A9E 00000000:0000 0A 00000000:00000000 00:00000000 00000000 %5d        0 1500 1 0000000000000000 0 0 0 10 0\n", uid)
}

// withChild gives the fake app (pid 10, uid 1000) a child, pid 11, a worker as uid 65534,
// holding the socket inodes held.
func withChild(t *testing.T, root string, held ...string) {
	t.Helper()
	for name, data := range map[string]string{"10/task/10/children": "11 ", "11/task/11/children": "", "11/comm": "worker\n",
		"11/status": "Name:\tworker\nUid:\t65534\t65534\t65534\t65534\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "11/fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, in := range held {
		if err := os.Symlink("socket:["+in+"]", filepath.Join(root, "11/fd", string(rune('3'+i)))); err != nil {
			t.Fatal(err)
		}
	}
}

func addSidecar(t *testing.T, root string, uid int) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, "net/tcp"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(sidecarListener(uid)); err != nil {
		t.Fatal(err)
	}
}

// A UNIX socket the app listens on beside its TCP port carries traffic the TCP table does not
// show: the watch is unavailable, naming it, rather than a watch of the idle TCP port. Sockets
// that do not listen (a connection, /dev/log) are no reason.
func TestUNIXListenerUnwatchable(t *testing.T) {
	for _, tc := range []struct {
		name string
		held []uint64
		want []string // the unwatchable listeners, as String gives them; nil: watched
	}{
		{"a path", []uint64{1000, 7001}, []string{`unix "/run/app.sock" (pid 10): ` + whyUNIX}},
		{"abstract seqpacket", []uint64{1000, 7003}, []string{`unix "@ctl socket" (pid 10): ` + whyUNIX}},
		{"unnamed", []uint64{1000, 7005}, []string{`unix "" (pid 10): ` + whyUNIX}},
		{"connections and datagrams only", []uint64{1000, 7002, 7004}, nil},
		{"a UNIX socket and UDP", []uint64{1000, 7001, 5001}, []string{"udp 0.0.0.0:53 (pid 10): " + whyUDP, `unix "/run/app.sock" (pid 10): ` + whyUNIX}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, setup, err := openFakeSetup(fakeProc(t, tc.held, "32768 60999", ""), Config{})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("open: %v, want the TCP listener watched", err)
				}
				s.close()
				if got := listenerStrings(setup.Watched); !slices.Equal(got, []string{"tcp 0.0.0.0:8080 (pid 10)"}) {
					t.Errorf("watched %q", got)
				}
				return
			}
			u, ok := errors.AsType[*UnwatchableError](err)
			if !ok {
				t.Fatalf("open: %v, want an UnwatchableError", err)
			}
			if got := listenerStrings(u.Listeners); !slices.Equal(got, tc.want) {
				t.Errorf("unwatchable %q, want %q", got, tc.want)
			}
			if got := listenerStrings(setup.Unwatched); !slices.Equal(got, tc.want) {
				t.Errorf("the setup's unwatched %q, want %q", got, tc.want)
			}
		})
	}
}

// A listener no readable process holds may be held by a process of the app's tree that drainit
// may not read (a setcap server, a worker of another user that opened a port of its own): the
// watch is unavailable, naming it and the process, rather than a watch of the wrong port. Where
// every listener of the namespace is accounted for, the unreadable process holds none of its own;
// and one whose owner runs none of the app's processes (a mesh sidecar's own user) is not theirs.
func TestUnreadableProcessListener(t *testing.T) {
	for _, tc := range []struct {
		name         string
		sidecar      int // its owner; 0: no sidecar
		denied       []int
		watched, not []string
		unwatchable  bool
	}{
		{"a sidecar beside a readable app", 1337, nil, []string{"tcp 0.0.0.0:8080 (pid 10)"}, []string{"tcp 0.0.0.0:15006: " + whyNotApps}, false},
		{"an unreadable worker, every listener accounted for", 0, []int{11}, []string{"tcp 0.0.0.0:8080 (pid 10)"}, nil, false},
		{"an unreadable worker and a listener no one holds, the worker's user's", 65534, []int{11}, nil, []string{"tcp 0.0.0.0:15006: held by no process drainit may read; it may be held by pid 11 of the app's tree"}, true},
		{"an unreadable worker and a listener no one holds, the app's user's", 1000, []int{11}, nil, []string{"tcp 0.0.0.0:15006: held by no process drainit may read; it may be held by pid 11 of the app's tree"}, true},
		{"an unreadable worker and a sidecar of a user of its own", 1337, []int{11}, []string{"tcp 0.0.0.0:8080 (pid 10)"}, []string{"tcp 0.0.0.0:15006: " + whyNotApps}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeProc(t, []uint64{1000}, "32768 60999", "")
			withChild(t, root)
			if tc.sidecar != 0 {
				addSidecar(t, root, tc.sidecar)
			}
			s, setup, err := openSystem(Config{AppPID: 10}, systemOptions{proc: root, self: 1, force: MethodProcNet, denied: tc.denied})
			if tc.unwatchable {
				if _, ok := errors.AsType[*UnwatchableError](err); !ok {
					t.Fatalf("open: %v, want an UnwatchableError", err)
				}
				if len(setup.Unwatched) != 1 || !strings.HasPrefix(setup.Unwatched[0].String(), tc.not[0]) {
					t.Errorf("unwatched %q, want one starting %q", listenerStrings(setup.Unwatched), tc.not[0])
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v, want a watch", err)
			}
			s.close()
			if got := listenerStrings(setup.Watched); !slices.Equal(got, tc.watched) {
				t.Errorf("watched %q, want %q", got, tc.watched)
			}
			if got := listenerStrings(setup.Unwatched); !slices.Equal(got, tc.not) {
				t.Errorf("not watched %q, want %q", got, tc.not)
			}
		})
	}
}

func listenerStrings(ls []Listener) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.String())
	}
	return out
}

// The parser of /proc/net/unix takes listening stream and seqpacket sockets with their paths,
// spaces included, and passes over what it cannot read.
func TestParseProcNetUnix(t *testing.T) {
	data, err := os.ReadFile("testdata/unix/unix")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "garbage\n0000: 1 2 3\n0000000000000000: 00000002 00000000 0001000x 0001 01 9 /x\n"...)
	var got []unixListener
	parseProcNetUnix(data, func(u unixListener) { got = append(got, u) })
	want := []unixListener{{7001, "/run/app.sock"}, {7003, "@ctl socket"}, {7005, ""}, {6002, "/run/sidecar.sock"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
