// Package drainwatch decides when an adaptive drain can end: it watches for new TCP connections
// to the app's listening sockets and reports once none has arrived for a quiet period (after a
// minimum), or once a maximum has passed. The quiet period is fixed, or follows the traffic
// (Config.Auto; see "The automatic quiet period").
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
// The watch sees all of the app's traffic or none (appListeners): where a listener of the app's
// cannot be watched, a UNIX socket, UDP (below), or a TCP listener of the namespace that no
// readable process holds while a process of the tree drainit may not read (another user's,
// without CAP_SYS_PTRACE; a non-dumpable one) might (its owner, the user that made it, runs a
// process of the tree: a sidecar's, made by a user of its own, is not), Start reports
// ReasonUnavailable with an
// *UnwatchableError naming them (Result.Unwatchable), and the caller drains for its fixed delay.
// A UNIX socket cannot be watched soundly, though sock_diag's unix_diag lists a listener's
// connections (its icons, and the connected sockets that carry its name): nothing counts them
// (no PassiveOpens for AF_UNIX), and a connection leaves nothing behind when it closes (no
// TIME_WAIT), so a snapshot sees only those open at a poll. A proxy in the pod speaking HTTP/1.0
// to the app's socket (nginx's proxy_pass to a gunicorn socket, by default) opens one per request,
// closed within a millisecond or two: polled every 100 ms, nearly all would go unseen, and the
// drain would end while they still came. So --drain-ports takes TCP endpoints only.
// Unreadable processes are otherwise taken to hold only listeners the others hold (workers
// inherit their parent's); where the others hold none, Start reports ReasonUnavailable naming
// those processes. Config.Setup receives what was found: each watched listener with the
// process holding it, each other one with why it is not watched (Setup).
// A connection belongs to a listener when its local port is the listener's and its local address
// is the listener's, or the listener's is a wildcard (0.0.0.0 takes IPv4, :: both, IPv4 as
// v4-mapped). So several apps on one port at different addresses in a shared namespace (the
// rollout harness's loopback pods, hostNetwork pods) are told apart. They are not when two apps
// share one address and port with SO_REUSEPORT, or when a V6ONLY [::]:P and another app's
// 0.0.0.0:P coexist: the table does not say which socket a connection came through.
//
// # UDP
//
// Only TCP is watched, and an app that serves UDP cannot be: Start reports ReasonUnavailable
// with the UDP listeners (Result.Unwatchable) and the caller drains for its fixed delay.
// Linux counts no socket's datagrams: udp_diag (sock_diag for UDP) reports a socket's receive
// queue in bytes and, with SK_MEMINFO, its buffers and drops; /proc/net/udp has the same queues
// and a drops column. The namespace's Udp InDatagrams counts every socket's, and so the answers
// to the app's own DNS queries and whatever else it receives as a client: an app that resolves
// names would never look quiet. A queue snapshot shows datagrams only while the app lags behind.
//
// The app's UDP sockets are found as its TCP listeners are, by inode among /proc/PID/fd of its
// tree, in /proc/net/udp and udp6 (read once, at the start). One serves (serving) when clients
// outside the pod can send to it: it is not connected (a connected socket hears its peer only,
// as a resolver's query does), its address is a wildcard or not loopback, and its port is one the
// app chose, not the kernel: outside ip_local_port_range, or in ip_local_reserved_ports. The
// kernel picks every port it assigns (bind to port 0, a send before any bind) from that range
// and never a reserved one, so the app's unconnected client sockets (a QUIC client's, a
// resolver's that does not connect) are inside it, and servers, which bind the port their
// clients know, are almost always outside (53, 443, 514, 8125). A server bound inside the range
// (a TURN relay's 49152-65535) passes for a client, and its traffic goes unseen; a client bound
// to a fixed port outside makes the drain fixed, the safe side. With Config.Ports the app's
// sockets are not looked at, UDP included: the way out for an app whose UDP is not routed to
// the pod (a cluster's gossip).
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
//     kernel filtering by local address and port: a snapshot per poll, compared with the
//     previous one (see detector for what counts as new: a connection past its handshake, not a
//     SYN alone, which anyone can send from any address; ESTABLISHED, and connections that
//     arrived and began closing or went to TIME_WAIT between two polls; a client reusing a
//     4-tuple counts).
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
// # Requests on open connections
//
// A new connection is what kube-proxy routes, but an L7 proxy (ingress-nginx's upstream
// keepalive, Envoy, haproxy's http-reuse, a cloud load balancer) keeps connections open to the
// pod and routes each request over one of them: while it still routes, no new connection need
// come (bench/L7PROXY.md: none in a whole drain, with the pod answering 150
// requests a second). With Config.Requests, a second sock_diag socket that asks for each
// connection's tcp_info (requestWatch) reads the established connections to the watched
// listeners at every poll, and each whose tcpi_bytes_received grew since the last poll counts
// as one arrival beside the new connections, at most once per countEvery (100 ms): a connection
// that carried several requests between two counts counts once, which understates the rate and
// lengthens the auto quiet period, the safe side, and one that receives without a pause (an
// upload) is not taken for 20-50 requests a second where the polls come that often. Data held
// back by countEvery is counted once it has passed, and a connection that received data while
// watched and has closed counts once more at the poll that finds it gone (its last data may have
// come after the last poll that read it: nginx closes its pooled connections right after its
// last requests), so the silence never starts before the last data. A connection is known by its
// socket cookie; one new since the last poll is the
// sampler's new connection, not counted again. Without Requests the same read is made once at
// the end of a drain that ended quiet: Result.Busy is how many open connections received data
// within the silence it waited (tcpi_last_data_recv), for the log to say that the silence may
// not be one. With Requests and Auto the History is not used: it counts new connections only,
// and the estimator's 30 s cap would hold the requests' rate to it.
//
// Health checks are traffic too: a probe on the app's port every period shorter than the quiet
// period keeps the drain open until the maximum. Point readiness probes at drainit's /readyz.
//
// # The automatic quiet period
//
// A fixed quiet period is a guess of its own: at 200 new connections a second, 1 s of silence is
// 200 expected arrivals missing, far more proof than needed; at 1 a second it is barely one.
// With Config.Auto (--drain-quiet auto) the silence that ends the drain follows the traffic.
//
// The model: new connections arrive as a Poisson stream, so a stream still routed at rate r is
// silent for s with probability exp(-r·s). The drain ends once that probability is below
// AutoEpsilon (10⁻⁴) for a stream at half the recent rate: after a silence of
// 2·ln(10⁴)/r ≈ 18.4/r (0.09 s at 200/s, 0.92 s at 20/s), and never sooner than AutoFloor
// (100 ms), never later than Max.
//
// Why half the rate (AutoStepGuard): kube-proxies (or load balancers) drop the pod one by one,
// each at its own propagation delay, so the traffic fades in steps, and the silence after a
// step is first judged at the rate before it. Three proxies of equal share dropping the pod at
// 0.3, 1 and 2.5 s (TestAutoQuietSteps): judged at the full rate, 13 drains in 300 ended before
// the last proxy was done; at half the rate, none. The assumption, then, is that whatever is
// still routed carries at least half of the traffic seen just before. A straggler with less, say
// 2% of the traffic on a proxy slower than the others, is outside it: its stream is
// indistinguishable from the end of the others' until its own silence, 2·ln(10⁴)/(its rate),
// is long (4.6 s for 2% of 200/s), and the drain ends after the others' with it still routing
// (TestAutoQuietStragglerIsOutsideTheModel). Where such a straggler is known, --drain-min at
// its delay covers it; a fixed quiet period only makes it less likely.
//
// Why not less: each silence is tested at AutoEpsilon, but a drain tests one at every arrival
// while the last proxy routes (about a hundred in 1.5 s at 67/s), and most of the risk is just
// after a step, before 20 arrivals at the new rate have lowered the estimate. Over 2,000
// simulated stops behind those three proxies at 200/s (TestAutoQuietSimulate's "guard" part),
// a guard of 1 ends the drain 0.15 s after the last proxy's delay (median; 0.30 s at most) and
// before its last connection in 36 stops; 1.5: 0.23 s and 10; 2: 0.30 s and 1. At 20/s: 244, 35
// and 4 stops. Ending within ~0.16 s of the last delay (a stop within 0.3 s of it, the app's own
// stop taking the rest) is then out of reach at any guard that loses almost nothing.
//
// The rate r is estimated at the last arrival, not now: the silence since is what is tested and
// must not also lower the rate it is tested at. It is the rate over the shortest recent window
// (ending at the last arrival, at most AutoWindow long) that holds AutoMinArrivals (20)
// arrivals: short windows follow the steps down of a fading traffic as soon as 20 arrivals have
// come at the new rate, and 20 arrivals bound the estimate's error (±45%, two standard
// deviations) within the factor 2 of the step guard. An estimate over the whole drain would
// overstate the rate at its end; the rate before the trigger alone would too, and more. Nor is
// the rate ever more than over the whole window (AutoWindow, 30 s): a burst, such as a client's
// connection pool opening 25 connections at once, or a client that means to end the drain
// early, is 20 arrivals in a few milliseconds, and judged alone would make a traffic of 5/s
// look like thousands a second and end the drain at the floor while it is still routed
// (TestAutoQuietBurst).
//
// The oldest bin in reach that holds an arrival counts in neither: its arrivals may all have come
// at its end (a burst spanning a sample: 25 connections in 0.3 s across the drain's start were
// once judged as 20/s over 1.2 s, a history bin's whole second, and the drain ended 0.9 s in
// while a 2/s trickle still came: TestAutoQuietBurstAcrossSample). Traffic younger than
// AutoMinReach after that bin is spread over AutoMinReach, over which a burst of a connection
// pool's size is a modest rate; arrivals that all fell in one bin are no rate at all. So the
// silence needed after a rise in traffic is longer, and the first seconds of the History are
// sampled every 100 ms so that a young pod's first bin is short.
//
// Fewer than AutoMinArrivals arrivals (counted: the window ends with one, so n-1 of n) are judged
// at a lower bound: the rate under which as many arrivals had a 5% chance, relative to that
// bound's ratio at 19, so that it is continuous there (fewRate). The silence needed then grows
// smoothly as the evidence thins (TestEstimatorNoCliff), where it once jumped from a second to
// Max below 20 arrivals (TestAutoQuietFewArrivalsNoCliff): it runs past a 15 s Max at about one
// arrival a second.
//
// And the silence needed is never shorter than a gap the traffic has shown and come back after,
// at least twice in reach (repeatedGap): periodic bursts, B connections every P seconds, would
// otherwise end a drain inside a gap whenever 18.4·P/B < P (TestAutoQuietPeriodicBursts). One
// such gap alone does not count: it is the pause before the traffic began as often as not. A
// period under the History's second is seen only once the drain's polls have seen two gaps.
//
// The window reaches back before the drain: Record samples the namespace's PassiveOpens counter
// once a second (History) from the app's start, so the estimate starts from the pod's steady
// rate even when the drain sees only a few connections of its own (20/s and a 0.2 s
// propagation delay: 4). That counter is the app's alone only where the passive-opens method
// applies. Where other listeners share the namespace (a sidecar's: Envoy's 15001/15006, an
// exporter, another pod on hostNetwork), a sidecar's traffic would pollute it, so the History
// also counts the new connections to the app's own listeners with a sock_diag dump at each
// sample (appCounter; the app's listeners are looked for again when the namespace's set of
// listening sockets changes), and a drain that watches the same listeners with sock-diag starts
// from those counts (Result.HistoryFrom "app-listeners"). A connection that came and went
// between two samples is missed, as between two polls: the counts are a lower bound of the
// rate, so the silence they lead to errs long, and they date no silence (below). Without either
// history the estimate rests on the drain's own arrivals, a few of them judged at a lower bound
// (above). When the silence needed runs past Max (at 1/s, 18 s), the drain says so
// (Result.Note) and waits for Max rather than guess.
//
// The history also dates the silence. When the counter has not moved since a sample before the
// drain, the silence began at that sample at the latest, and it counts: on a real kubelet the pod
// often leaves the Service's endpoints before the kubelet calls its preStop (the DELETE starts
// both; the hook waits for the kubelet's next PLEG relist, 0.25-1.8 s later), and a second of
// silence before the drain is as strong a proof as one during it. Such a drain ends at its first
// poll: beside another ready pod in integration/node's BenchmarkClusterDrain, 0.06 s after
// /prestop (median of 10 stops), where it ended 0.56 s after it counting from the drain's start
// (median of 8). A silence under way is dated to the second, at the sample; with sock-diag or
// proc-net-tcp there is no history and it counts from the drain's baseline.
//
// The 20 arrivals have a price at low rates, and the history does not lower it. At 20/s their
// rate is within ±22% (one standard deviation), so the silence needed is 0.92 s at the true
// rate, but the drain ends more than 1.07 s after the proxy's delay (the harness's D + 1.2 s,
// less the app's own stop) in 15-29% of drains, with 1.5 s, 5 s or 30 s of history alike
// (TestAutoQuietSimulate, which runs the harness's pods over 1,000 seeds), where a fixed 1 s
// quiet period ends by D + 1 s and a poll. A steady history of 30 s would pin the rate within
// ±4%, but nothing in a drain tells a low draw of a steady traffic from the first arrivals after
// a step down: behind three proxies of equal share that drop the pod at 0.3, 1 and 2.5 s, the 9
// arrivals expected between the first two steps at 20/s are as few as a steady 20/s gives one
// time in nine. An estimate that keeps the long rate until a change-point test is sure of a
// step (the whole reach's rate unless a recent part of it is improbably low at that rate) ends
// a single proxy's drain within 1.07 s of its delay but for one in a hundred, with 30 s of
// history, yet it judges the silence after the second of the three proxies at three times the
// traffic the third still sends: over 10,000 seeds, 59 drains ended before the third's last
// arrival instead of 17, and 75 instead of 44 after a single step of 3x. Loosened until those
// counts are about these (within one to three), it still leaves 68-93% as many single-proxy
// drains over 1.07 s, with 5 s or 30 s of history. So at low rates the automatic quiet period
// pays in time, not in requests.
//
// Those counts are today's risk, in the model's own terms: over 10,000 simulated drains, this
// estimate ends before the last arrival in 17 behind the staggered proxies at 20/s, 4-5 at
// 200/s and none at 1000/s, where a fixed 1 s quiet period ends early 2-4 times in 1,000 at
// 20/s; and in 44-55 after a single step of 3x at 20/s (20-26 at 200/s), a step larger than the
// step guard's 2x, outside the model. The harness's 20 stops a cell cannot show rates this low.
//
// The floor, AutoFloor (100 ms). A connection is dated by the poll that saw it, at most one
// poll after it arrived, so the silence measured is never longer than the real one; but the
// silence can be the path's, not the traffic's. kube-proxy's iptables, nftables and IPVS
// updates are atomic kernel paths (one iptables-restore, one nft transaction; IPVS sets the
// endpoint's weight to 0): once a node's rules change no connection trickles in from it, but for
// a SYN retransmitted after a loss (1 s, 3 s, ...), which no quiet period short of that covers,
// and one routed just before has a trip of well under a millisecond to a few. A userspace proxy
// in the path (an ingress controller, a service mesh's sidecar, a cloud load balancer) can stop
// for a garbage collection, or for the rest of a CFS period (100 ms by default) when its
// container hits its CPU limit, and a client can too: the pod then sees a silence that proves
// nothing about routing. The rollout harness, whose load generator and proxies are userspace,
// shows it: at 2,000 new connections a second on 2 cores, its own stalls of 60-100 ms made
// silences that ended a few drains at this floor while a proxy still routed to the pod (it
// reports those runs as noisy: the stall covered most of the silence). 100 ms covers one CFS
// period; the drain still ends about 0.12 s after the last connection at 200 new connections a
// second and more.
//
// Polls come every quarter of the silence needed (AutoMinInterval, 20 ms, at least;
// AutoMaxInterval, 50 ms, at most), so that the drain ends within a quarter of it after it is
// due, and the CPU budget still rules: a passive-opens poll costs ~0.3 ms of drainit's CPU in
// all (the sample itself 0.02 ms; the rest is the Go runtime's sleep and wake-up), 1.5% of a
// core at 20 ms.
//
// # Cost
//
// drainit's CPU while draining stays within 2% of a core: each poll's cost is measured, the
// more of the sample's thread CPU (kernel included) and the whole process's CPU since the last
// poll (which counts the timer, the scheduler's wake-up and the syscalls around the sample:
// several times the sample for the passive-opens method), the latter no more than pollOverhead
// (1 ms) beyond the sample, and the next poll comes no sooner than 50 times that, and no sooner
// than Config.Interval (DefaultInterval has the measurements); nor before the drain's own CPU
// since Start, setup included (finding the listeners, the baseline: a few milliseconds,
// measured on their thread; the setup up to setupBudgeted, 5 ms), is 2% of the time since. The process's CPU beyond pollOverhead is
// other work's, and not the drain's to pay for: reaping an orphan storm, or a client holding
// hundreds of connections to the control server (it needs no token) took enough of it to space
// the polls 0.6-3.9 s apart, and sock-diag then missed connections that came and went between
// two polls: the drain ended while clients still came. A big table makes the
// polls rarer, not costlier; a connection is then seen later, which only makes the drain longer.
// Beyond 5 ms the setup is not budgeted: held back in full, an app with 19,000 descriptors to
// look through (124 ms) had its first poll 6.2 s late, and the drain ended that much later. On a
// table of 42,000 sockets read as text (proc-net-tcp) the setup cost ~170 ms of CPU, 4.4% of a
// 4 s drain, 1.2% of the default 15 s maximum.
package drainwatch
