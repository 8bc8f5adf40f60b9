// Package rollout is the zero-downtime harness: it stops one pod of a small service the way a
// rolling update does, under steady load, and counts what the clients lost.
//
// A run, modelled on a pod deletion (docs/kubelet-stop-sequence.md):
//
//   - Pods: two or more instances of integration/testapp's HTTP server or of a real nginx
//     (Scenario.App), each PID 1 of its own PID namespace (integration/pod), bare or under an
//     init (drainit, tini, dumb-init), each on its own loopback address (127.0.0.2, 127.0.0.3, …)
//     in a network namespace of its own, as a pod on a node has (netns_linux.go; with
//     Config.HostNetwork they share the harness's instead, as hostNetwork pods do).
//   - Endpoints: a Balancer, the kube-proxy stand-in: L4, round-robin, no retries, no health
//     checks, like iptables DNAT. At the deletion it keeps sending new connections to the stopping
//     pod for the propagation delay, then drops it from its list; established connections keep
//     flowing until one side closes them. It reaches a pod from inside the pod's namespace (its
//     sockets to the pod are made there), so the pod's side of every connection, TIME_WAIT
//     included, is in the pod's namespace, as under DNAT. A Cell with a Topology puts several
//     proxies in front of the pods, each with its share of the load and its own delay, so that
//     the traffic fades in steps, as when each node's kube-proxy drops the pod at its own time
//     (issue 16: "staggered", three of equal share at 0.3, 1 and 2.5 s; "straggler", the same and
//     a fourth with 2% of the traffic until 4 s).
//   - Or, for a scenario with Scenario.Pooled, L7 pooling proxies (NewPooledProxy, pooled.go), the
//     stand-in for an ingress controller with upstream keep-alive, Envoy, or haproxy with
//     http-reuse: each reads the clients' HTTP/1.1 requests and forwards each, round-robin per
//     request, over a pool of keep-alive connections to the pod it picked, which it opens as
//     needed, reuses, and never closes while the pod is listed (its sockets to the pod made in
//     the pod's namespace, as the Balancer's). At the deletion it keeps routing requests to the
//     stopping pod for the propagation delay, then stops; the pod's pooled connections stay open
//     and idle, as real proxies leave them. So the pod sees requests, and no new connection
//     unless the load's concurrency outgrows the pool. No retries: a request the pod refuses, or
//     whose connection it closes before answering, gets a 502 and is counted as the Balancer's
//     refusals and cuts are. Its Routes, and a run's routed counts, pod rate and last routed
//     time, are requests; Result.PoolDialsAfter counts the connections it opened to the pod
//     after the deletion.
//   - Kubelet: integration/kubelet stops the pod (preStop none, exec sleep, or httpGet to
//     drainit's control server; then the stop signal, SIGTERM or the image's STOPSIGNAL
//     (Scenario.StopSignal); SIGKILL after the grace period).
//   - Load: a steady rate of requests in two modes at once, a new connection per request and
//     keep-alive clients. Every failure is recorded with its kind and time since the deletion.
//     With Config.Poisson the new-connection requests come as a Poisson stream, as independent
//     clients make them; a Cell's Rate sets the new connections a second the stopped pod gets
//     (the load is that times the pods). Before the deletion the load runs long enough to have
//     sent the pod 30 new connections (3 s at most): a pod in service has a past, and the
//     automatic quiet period reads it.
//
// The Balancer is also the harness's view of the wire. A userspace proxy has accepted the
// client's connection before it can dial the pod, so where DNAT would make the client's connect
// fail with ECONNREFUSED the Balancer resets the connection and records the refusal; the load
// generator asks it (Balancer.Take) and counts the failure as "refused". It also records every
// request a pod closed the connection on without answering, and tells apart:
//
//   - cut: cut in flight. The pod had read the request (its side closed with a FIN, not the RST a
//     socket closed with unread data sends) and had had it for at least Balancer.CutAfter (a
//     fifth of the app's request time) — it was working on it. Surely so: the harness's own
//     lateness in the run (its timers' worst) is taken off the time it saw, since it may have
//     seen the close that much late.
//   - dropped: the pod closed the connection as the request arrived: read within CutAfter (Go's
//     http.Server drops a request it reads once Shutdown has begun) or never read. This is
//     HTTP/1.1's keep-alive race, which clients answer by retrying on a reused connection.
//
// Keep-alive clients retry once, as Go's net/http and curl do, a request that failed on a reused
// connection before any byte of the answer arrived: that is how every HTTP/1.1 client lives with a
// server closing an idle connection while a request is on its way. The retry's outcome is what
// counts; retries are reported, and a cut request stays counted as cut even when its retry
// succeeded (the app had it and dropped it).
//
// A new-connection client closes its connection with a RST once it has its answer, and the
// Balancer passes that on to the pod as a FIN: the pod sees what it would under DNAT, and the
// client's TIME_WAIT, which would be on the client's machine, stays out of the host's TCP table.
//
// # Adaptive drain (issues 6 and 16)
//
// The scenarios drainit-auto, drainit-adaptive, drainit-fixed5 and drainit-fixed10 (DrainKeys,
// with the L7 pair below) stop the pod the same way (httpGet preStop, grace DrainGrace) with --drain adaptive and
// --drain-quiet auto or 1s, and fixed 5 s and 10 s drains. The adaptive ones claim no loss and a
// pod stop within a bound (Scenario.MaxStop, MedianStop), which the checks hold them to:
// propagation + 1.5 s for the 1 s quiet period; for auto, issue 40's targets, every stop within
// the last proxy's delay + 0.6 s at 200 new connections a second at the pod and more, the median
// within + 1.2 s below. With the straggler, auto claims
// nothing (Scenario.OutsideModel: a proxy with less than half of the traffic the others leave is
// outside its model, see drainwatch) and its results are shown. In its own network namespace
// drainit counts with the exact passive-opens counter; with Config.HostNetwork it watches with
// sock_diag filtered by the pod's address. Each run records what the watch saw (Result.Drain,
// from drainit's log: the rate and the silence auto judged on, its CPU) beside what the
// Balancers sent the pod, and how many of those connections the client closed first
// (Route.ClientClosedFirst): a sock_diag snapshot can miss only those (the pod's side leaves no
// TIME_WAIT), and only when one lives less than a poll interval. Result.TCPSockets counts the
// host namespace's TCP sockets, most of what each sock_diag poll walks (it walks the whole kernel
// table): drainwatch polls less often as that grows, to keep within its CPU budget, and a drain
// then ends up to one poll interval late. Result.DrainCPU is drainit's CPU from the deletion to
// the end of its drain (schedstat of all its threads), against the 2% budget.
//
// # Behind a pooling L7 proxy
//
// The scenarios l7-connections and l7-requests (L7Keys, part of DrainKeys) stop the pod as
// drainit-adaptive does (--drain adaptive --drain-quiet 1s), behind pooling proxies
// (bench/L7PROXY.md). l7-connections counts new connections, the default --drain-watch connections,
// which the proxy does not open: the drain sees silence from the start, ends after its quiet
// period, and the requests the proxy routes to the pod after that fail (at a 3 s propagation
// delay, 100 of them at the default load, refused). That is the known limitation, not a failure
// of the check: the scenario claims nothing (Scenario.OutsideModel) and its results are shown. A
// run in which the proxies' pools grew during the drain shows less loss, or none: the new
// connections held the drain open. l7-requests adds --drain-watch requests, which also counts
// the open connections that received data between two polls, and claims what the 1 s quiet
// period claims behind the Balancer: nothing lost, the pod stopped within propagation + 1.5 s.
//
// # A machine too busy to time a run
//
// The harness's clients, proxies and pods share the machine with whatever else runs there. When
// that starves the harness, its timestamps are late, and what it decides by time goes wrong: a
// request the pod closed unanswered counts as cut in flight when the pod had it for
// Balancer.CutAfter (20 ms) — under a load of 30 on 2 cores, a keep-alive request that Go's
// http.Server read as Shutdown began, and closed 230 ms later without running a handler (the
// client's retry succeeded), counted as cut; a client times out when the harness stalls for its
// timeout; a stop takes longer than its bound. And a stalled load generator or proxy sends the pod
// nothing: a silence an adaptive drain may rightly end on while a proxy still lists the pod. So
// each run watches the harness itself: a goroutine's 10 ms timers, and the load generator's due
// times (stall.go, monitor_linux.go). A run whose timers or generator were late by more than
// Config.CutAfter is noisy (Result.Noisy, with Result.TimerLate and the load average). In a noisy
// run a cut, a client's timeout and a stop over its bound do not fail a claim: the row and the
// check say "noisy" (and cmd/rollout's exit status stays 0), and so does what was lost after an
// adaptive drain that ended on a silence the harness was stalled for half of
// (DrainLog.SilenceStalled), and everything, a SIGKILL included, in a run whose timers were a
// second or more late (FrozenLate: the whole machine stopped; once, for 10-25 s, during a
// benchmark on this VM). A request refused or reset otherwise, and a SIGKILL, fail them whatever
// the load.
//
// # A real nginx
//
// The scenarios nginx-bare, nginx-drainit and nginx-adaptive (NginxKeys) run Debian's nginx
// (NginxPath; nginx-light is enough) instead of the test app, master and one worker, configured
// in a temporary directory to answer 200 at once, and stop the pod the way the runtime stops an
// image FROM nginx, whose STOPSIGNAL is SIGQUIT: SIGQUIT to PID 1, no preStop. What the runs
// show about nginx (1.22):
//
//   - SIGQUIT is nginx's graceful stop, and its first step is to close the listening socket:
//     bare, the pod is gone within about 10 ms, and every new connection the balancer still
//     sends it during the propagation delay is refused, as for the graceful test app.
//   - nginx closes its idle keep-alive connections at once; the keep-alive clients reconnect
//     elsewhere, without a failure.
//   - Behind drainit --stop-signal QUIT the runtime's SIGQUIT starts the drain (it is a trigger,
//     not forwarded at once) and nginx gets its SIGQUIT when the drain is over: nothing lost.
//     A drainit without that rule (before commit 641be8b) forwards the SIGQUIT at once, and the
//     pod loses what the bare one does.
//
// A scenario whose init or app is not installed is skipped with the reason, except under
// CI=true, where it is a failure.
//
// Runs need root (PID namespaces) and only use loopback.
//
// # Why it is not in bench/
//
// The harness is the drain benchmark (`make bench` runs cmd/rollout -scenarios drains
// -drain-table and keeps its table in bench/DRAIN.md), but it is three things, and the other two
// are tests. It is the integration test of what drainit exists for
// (rollout_linux_test.go: nothing lost behind drainit, requests lost without it, a real nginx
// stopped with SIGQUIT), and it is what `make demo` runs. Its claims are checked on every run
// (Checks; cmd/rollout exits 1 when one fails), so the benchmark's figures come from the same
// code the tests hold to those claims. It is built on the other integration packages, the
// launcher (integration/pod), the kubelet simulator (integration/kubelet) and the output
// collector (integration/lines), as the tests are. bench/ is the PID 1 micro-benchmark: one
// init at a time, no network, a program of its own (package main) that compares drainit with
// tini, dumb-init and catatonit; it uses the same launcher.
package rollout
