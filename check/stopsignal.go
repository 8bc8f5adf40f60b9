package check

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/drainit/drainit/signals"
)

// The stop signal rules. Whatever the runtime stops a container with must be one of drainit's
// triggers, or drainit passes it straight to the app and nothing drains. The runtime sends the
// pod's lifecycle.stopSignal (Kubernetes 1.33+, feature gate ContainerStopSignals, and only
// where the runtime implements the CRI field: containerd 1.6 does not), else the image's
// STOPSIGNAL, else SIGTERM. The manifest shows the first; the image's STOPSIGNAL can only be
// guessed from its name.

// k8sStopSignals are the values the API server accepts in lifecycle.stopSignal on Linux (the
// Signal enum of k8s.io/api/core/v1): SIG-prefixed upper-case names, SIGRTMIN+1..15 and
// SIGRTMAX-14..1. Anything else makes it reject the pod.
var k8sStopSignals = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`ABRT ALRM BUS CHLD CLD CONT FPE HUP ILL INT IO IOT KILL PIPE POLL
		PROF PWR QUIT SEGV STKFLT STOP SYS TERM TRAP TSTP TTIN TTOU URG USR1 USR2 VTALRM WINCH XCPU XFSZ
		RTMIN RTMAX`) {
		m["SIG"+n] = true
	}
	for i := 1; i <= 15; i++ {
		m["SIGRTMIN+"+strconv.Itoa(i)] = true
	}
	for i := 1; i <= 14; i++ {
		m["SIGRTMAX-"+strconv.Itoa(i)] = true
	}
	return m
}()

// podStopSignal reads lifecycle.stopSignal. ok is false for a value the API server rejects.
func podStopSignal(s string) (sig syscall.Signal, ok bool) {
	if !k8sStopSignals[s] {
		return 0, false
	}
	if s == "SIGCLD" {
		return signals.SIGCHLD, true // an alias the API accepts and signals.Parse does not know
	}
	sig, err := signals.Parse(s)
	return sig, err == nil
}

// shortName is a signal as drainit's options are usually written: "QUIT", "RTMIN+2".
func shortName(sig syscall.Signal) string {
	return strings.TrimPrefix(signals.Name(sig), "SIG")
}

// stopSignal reports a lifecycle.stopSignal the API server rejects, a stop signal that is not
// one of drainit's triggers, and (a warning, by the image's name) an image whose inherited
// STOPSIGNAL (nginx's SIGQUIT, httpd's SIGWINCH, haproxy's SIGUSR1) drainit would forward at once.
func (k *containerCheck) stopSignal() {
	c, dc := k.c, k.dc
	if c.StopSignalLine != 0 {
		sig, ok := podStopSignal(c.StopSignal)
		if !ok {
			hint := "use an upper-case signal name with the SIG prefix, like SIGTERM or SIGQUIT"
			if s, err := signals.Parse(c.StopSignal); err == nil && k8sStopSignals[signals.Name(s)] {
				hint = fmt.Sprintf("write %q", signals.Name(s))
			}
			k.add(c.StopSignalLine, Error, RuleStopSignalInvalid, "lifecycle.stopSignal %q is not a signal Kubernetes accepts: "+
				"the API server rejects the pod (where ContainerStopSignals is on, Kubernetes 1.33+); %s", c.StopSignal, hint)
			return
		}
		if dc == nil || !dc.trigKnown || dc.isTrigger(sig) {
			return
		}
		name := signals.Name(sig)
		if !signals.Forwardable(sig) {
			what := fmt.Sprintf("drainit does not forward %s either, so the app gets no graceful stop before the runtime's SIGKILL", name)
			switch sig {
			case signals.SIGKILL:
				what = "SIGKILL ends drainit and the app at once"
			case signals.SIGSTOP:
				what = "SIGSTOP freezes drainit and the app until the runtime's SIGKILL at the end of the grace period"
			}
			k.add(c.StopSignalLine, Error, RuleStopSignalNotTrigger, "lifecycle.stopSignal is %s, which can never be one of drainit's triggers, "+
				"so no drain starts: %s; set it to the signal the app stops on gracefully (SIGTERM, or leave it unset) and drainit passes that on after the drain",
				name, what)
			return
		}
		k.add(c.StopSignalLine, k.forwardedSeverity(), RuleStopSignalNotTrigger, "lifecycle.stopSignal is %s, not one of drainit's triggers %s: "+
			"the platform stops the container with %s; %s; set --stop-signal %s (DRAINIT_STOP_SIGNAL=%s) or add %s to --triggers",
			name, dc.describeTriggers(), name, k.forwarded(name), shortName(sig), shortName(sig), shortName(sig))
		return
	}
	if dc == nil || !dc.trigKnown {
		return
	}
	is, ok := signals.ByImage(c.Image)
	if !ok || dc.isTrigger(is.Signal) {
		return
	}
	name, short := signals.Name(is.Signal), shortName(is.Signal)
	k.add(c.ImageLine, Warning, RuleStopSignalImage, "image %q looks like %s (a guess from its name): its images set "+
		"STOPSIGNAL %s, which images built FROM them inherit, so docker stop and the kubelet (through the runtime) stop the container "+
		"with %s; drainit's triggers are %s, so %s; set --stop-signal %s (DRAINIT_STOP_SIGNAL=%s)%s, which also makes %s "+
		"what %s gets after the drain (its graceful stop); docker inspect -f '{{.Config.StopSignal}}' shows the image's signal",
		c.Image, is.App, name, name, dc.describeTriggers(), k.forwarded(name), short, short, is.ForwardAdvice(dc.settings["forward"].raw), name, is.App)
}

// forwarded says what happens when the runtime's stop signal is not a trigger: drainit passes it
// to the app at once. A preStop hook that drains, or sleeps, has still run before it.
func (k *containerCheck) forwarded(name string) string {
	switch {
	case k.ps.kind == hookDrainit:
		return fmt.Sprintf("the preStop hook drains first, but the %s that follows goes straight to the app, not through drainit's stop step "+
			"(--stop-signal, --rewrite), and whenever the hook fails (FailedPreStopHook) the app stops with no drain at all", name)
	case k.ps.kind == hookSleep && k.ps.min > 0:
		return fmt.Sprintf("after the preStop sleep drainit forwards %s to the app at once: drainit's own drain (%s) and offline hooks never run",
			name, fmtDur(k.dc.drain.d))
	}
	return fmt.Sprintf("drainit forwards %s to the app at once: the app stops with no drain, while /readyz still answers 200 and "+
		"no offline hook has run", name)
}

// forwardedSeverity is how bad forwarding the stop signal at once is: an error when nothing
// drains, a warning when a preStop hook has drained or waited before it.
func (k *containerCheck) forwardedSeverity() Severity {
	if k.ps.kind == hookDrainit || (k.ps.kind == hookSleep && k.ps.min > 0) {
		return Warning
	}
	return Error
}

// forwardMasterWorker: an image that looks like haproxy, whose master (-W, as its image's entry
// point runs it) passes every signal on to its workers, under drainit's --forward group (the
// default), which signals the workers too: each gets every forwarded signal twice, the stop
// signal included. Said here only where stop-signal-image, whose advice names --forward child
// already, has nothing to say (the image's signal is a trigger).
func (k *containerCheck) forwardMasterWorker() {
	c, dc := k.c, k.dc
	if dc == nil || !dc.trigKnown {
		return
	}
	is, ok := signals.ByImage(c.Image)
	fw := dc.settings["forward"]
	if !ok || !is.ForwardChild || !dc.isTrigger(is.Signal) || !fw.known || fw.raw == "child" {
		return
	}
	line := fw.line
	if line == 0 {
		line = c.ImageLine
	}
	k.add(line, Warning, RuleForwardMasterWorker, "image %q looks like %s (a guess from its name), whose master (-W, as its images' entry point "+
		"runs it) passes each signal on to its workers; drainit's --forward is %q, so it signals the workers as well and each gets "+
		"every forwarded signal twice, %s (its graceful stop) included: a worker can exit 138 or 139 in the middle of its stop; set "+
		"--forward child (DRAINIT_FORWARD=child)", c.Image, is.App, fw.raw, signals.Name(is.Signal))
}
