// Package rollout is the zero-downtime harness: it stops one pod of a small service the way a
// rolling update does, under steady load, and counts what the clients lost.
//
// A run, modelled on a pod deletion (shared/kubelet-stop-sequence.md):
//
//   - Pods: two or more instances of integration/testapp's HTTP server, each PID 1 of its own PID
//     namespace (integration/pod), bare or under an init (drainit, tini, dumb-init), each on its
//     own loopback address (127.0.0.2, 127.0.0.3, …; the namespaces share the host's network).
//   - Endpoints: a Balancer, the kube-proxy stand-in: L4, round-robin, no retries, no health
//     checks, like iptables DNAT. At the deletion it keeps sending new connections to the stopping
//     pod for the propagation delay, then drops it from its list; established connections keep
//     flowing until one side closes them.
//   - Kubelet: integration/kubelet stops the pod (preStop none, exec sleep, or httpGet to
//     drainit's control server; then SIGTERM; SIGKILL after the grace period).
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
// Runs need root (PID namespaces) and only use loopback.
package rollout
