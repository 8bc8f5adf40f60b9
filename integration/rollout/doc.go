// Package rollout is the zero-downtime harness: it stops one pod of a small service the way a
// rolling update does, under steady load, and counts what the clients lost.
//
// A run, modelled on a pod deletion (docs/kubelet-stop-sequence.md):
//
//   - Pods: two or more instances of integration/testapp's HTTP server or of a real nginx
//     (Scenario.App), each PID 1 of its own PID namespace (integration/pod), bare or under an
//     init (drainit, tini, dumb-init), each on its own loopback address (127.0.0.2, 127.0.0.3, …;
//     the namespaces share the host's network).
//   - Endpoints: a Balancer, the kube-proxy stand-in: L4, round-robin, no retries, no health
//     checks, like iptables DNAT. At the deletion it keeps sending new connections to the stopping
//     pod for the propagation delay, then drops it from its list; established connections keep
//     flowing until one side closes them.
//   - Kubelet: integration/kubelet stops the pod (preStop none, exec sleep, or httpGet to
//     drainit's control server; then the stop signal, SIGTERM or the image's STOPSIGNAL
//     (Scenario.StopSignal); SIGKILL after the grace period).
//   - Load: a steady rate of requests in two modes at once, a new connection per request and
//     keep-alive clients. Every failure is recorded with its kind and time since the deletion.
//
// The Balancer is also the harness's view of the wire. A userspace proxy has accepted the
// client's connection before it can dial the pod, so where DNAT would make the client's connect
// fail with ECONNREFUSED the Balancer resets the connection and records the refusal; the load
// generator asks it (Balancer.Take) and counts the failure as "refused". It also records every
// request a pod closed the connection on without answering, and tells apart:
//
//   - cut: cut in flight. The pod had read the request (its side closed with a FIN, not the RST a
//     socket closed with unread data sends) and had had it for at least Balancer.CutAfter (a
//     fifth of the app's request time) — it was working on it.
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
// # Adaptive drain (issue 6)
//
// The scenarios drainit-adaptive, drainit-fixed5 and drainit-fixed10 (DrainKeys) stop the pod
// the same way (httpGet preStop, grace DrainGrace) with --drain adaptive and fixed 5 s and 10 s
// drains. The adaptive one claims no loss and a pod stop within propagation + quiet + 0.5 s
// (Scenario.MaxStop), which the checks hold it to. The pods share the host's network namespace,
// so drainit watches with sock_diag filtered by the pod's address, not the exact passive-opens
// counter of a namespace of its own. Each run records what that watch saw (Result.Drain, from
// drainit's log) beside what the Balancer sent the pod, and how many of those connections the
// client closed first (Route.ClientClosedFirst): a snapshot can miss only those (the pod's side
// leaves no TIME_WAIT), and only when one lives less than a poll interval. Result.TCPSockets
// counts the host namespace's TCP sockets, most of what each sock_diag poll walks (it walks the
// whole kernel table): drainwatch polls less often as that grows, to keep within its CPU
// budget, and a drain then ends up to one poll interval late.
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
