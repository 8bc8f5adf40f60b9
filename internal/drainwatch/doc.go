// Package drainwatch decides when an adaptive drain can end (--drain adaptive): it watches for
// new TCP connections to the app's listening sockets (and, with Config.Requests, requests over
// its open connections) and reports once none has arrived for a quiet period (after a minimum),
// or once a maximum has passed. The quiet period is fixed, or follows the traffic (Config.Auto).
//
// Start(ctx, Config) returns a channel that receives one Result and is then closed; cancelling
// ctx ends the watch without a Result. A Result with ReasonUnavailable comes at once when the
// app's traffic cannot all be watched (a UNIX socket, UDP, a listener that a process drainit may
// not read may hold; Result.Unwatchable) or nothing can be; the caller then drains for its fixed
// delay.
//
// How the listeners are found, the methods (passive-opens, sock-diag, proc-net-tcp) and what
// each cannot see, the model of the automatic quiet period with the simulations behind each of
// its numbers, and the CPU budget with its measurements are in docs/adaptive-drain.md, "Inside
// the watch".
package drainwatch
