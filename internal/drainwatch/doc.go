// Package drainwatch decides when an adaptive drain can end: it watches for new TCP connections
// to the app's listening sockets and reports once none has arrived for a quiet period (after a
// minimum), or once a maximum has passed.
//
// # Use
//
// Start(ctx, Config) returns a channel that receives one Result and is then closed; nothing
// blocks the caller, and cancelling ctx ends the watch (the channel closes without a Result). A
// Result with ReasonUnavailable comes at once when nothing can be watched; the caller then falls
// back to a fixed delay.
//
// # What is watched
//
// The listening sockets are those of the app's process tree: the socket inodes under
// /proc/PID/fd of the app and its descendants (read with internal/proc), matched against the
// LISTEN entries of the TCP table; or, with Config.Ports (--drain-ports), the LISTEN entries that
// match PORT or ADDR:PORT. The table is the one of drainit's network namespace, which is the app's.
// A connection belongs to a listener when its local port is the listener's and its local address
// is the listener's, or the listener's is a wildcard (0.0.0.0 takes IPv4, :: both, IPv4 as
// v4-mapped). So several apps on one port at different addresses in a shared namespace (the
// rollout harness's loopback pods, hostNetwork pods) are told apart. They are not when two apps
// share one address and port with SO_REUSEPORT, or when a V6ONLY [::]:P and another app's
// 0.0.0.0:P coexist: the table does not say which socket a connection came through.
//
// # Methods
//
// Start picks, at the start of the drain, the cheapest method that is right:
//
//   - passive-opens: when every listening socket of the namespace is watched (a pod of its own;
//     drainit's control server too if Config.SelfAccepted counts what it accepts), the
//     namespace's Tcp PassiveOpens counter (/proc/net/snmp) counts every connection a listener
//     completed the handshake for, accepted or not, however short-lived. Tens of microseconds a
//     poll. A listener that appears later in someone else's process only makes the drain longer.
//   - sock-diag: otherwise, the TCP table through netlink sock_diag (what ss(8) uses), with the
//     kernel filtering by local address and port: a snapshot per poll, compared with the previous one (see
//     detector for what counts as new: SYN_RECV, ESTABLISHED, and connections that arrived and
//     began closing or went to TIME_WAIT between two polls; a client reusing a 4-tuple counts).
//   - proc-net-tcp: the same from /proc/net/tcp and tcp6 where sock_diag is refused (seccomp,
//     gVisor). The kernel prints each socket as text, which costs several times sock_diag's.
//
// A snapshot cannot see a connection that arrived and vanished entirely between two polls: one
// the client closed first (or reset) within a poll interval, leaving no TIME_WAIT on the app's
// side. (A connection the app closes first stays in TIME_WAIT for 60 s and is always seen.) A
// connection of lifetime L is seen with probability about L/interval: a one-shot client closing
// 2 ms after connecting, polled every 100 ms, is seen one time in fifty. If the traffic left is
// only such clients at r per second, a quiet period Q passes without one being seen with
// probability exp(-r·Q·L/interval) (82% for r = 10/s, Q = 1 s): the drain may end early. Long-
// lived connections, those of proxies, load balancers and keep-alive clients, are always seen.
// That is why passive-opens is used wherever it applies. The other kernel signals do not help
// elsewhere: a listener's rx_queue is its accept backlog at the moment of the poll, a subset of
// what the snapshot shows; ListenOverflows and ListenDrops count failures, not arrivals; and every
// counter is namespace-wide.
//
// Health checks are traffic too: a probe on the app's port every period shorter than the quiet
// period keeps the drain open until the maximum. Point readiness probes at drainit's /readyz.
//
// # Cost
//
// drainit's CPU while draining stays within 2% of a core: each poll's CPU time (the thread's,
// kernel included) is measured, and the next poll comes no sooner than 50 times that, and no
// sooner than Config.Interval (DefaultInterval has the measurements). A big table makes the polls
// rarer, not costlier; a connection is then seen later, which only makes the drain longer.
package drainwatch
