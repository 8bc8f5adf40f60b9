// Package supervisor runs one app under drainit: it starts the app, reaps every process that
// ends up as drainit's child, forwards signals, runs the stop sequence and reports the app's exit
// status.
//
// The package, file by file:
//
//   - sequence.go: the stop sequence. Its table (Phase.spec) is a row per phase, in order, with
//     each input's step there; the steps follow, in the order of the phases.
//   - machine.go: the pure state machine the table drives (machine): its state, its inputs and
//     the actions it asks of the loop. Every input carries the time it happened, every output
//     is a list of actions; it never sleeps, reads a clock or touches a process.
//   - sequencelog.go: how the machine's steps are logged: its lines, its timeline, the summary.
//   - loop.go: the Supervisor and its loop, the one goroutine that owns the machine. Signals,
//     reaped exits, timers, hook results and control-server calls reach it through channels; it
//     performs the machine's actions.
//   - process_linux.go: process control behind a small interface (processes): start the app,
//     signal it or everything, reap, and say what survives SIGKILL. The loop's tests use a fake.
//   - spawn_linux.go, reap_linux.go: the Linux implementation's fork+exec and wait4 loop.
//   - control.go: the control server's view of the loop (/prestop, /status, the machine's
//     status), and the count of its connections the adaptive drain leaves out.
//   - terminal.go: job control when the app has the terminal (Ctrl-Z, fg).
//   - termination.go: the summary in the termination log, where Kubernetes shows it.
//
// Who owns wait: the reaper (reap, a wait4(-1) loop) is the only caller of wait in the whole
// drainit process. Nothing else may call Wait on any child, or the app's status could be stolen
// from it.
package supervisor
