package node

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/cluster"
	"github.com/drainit/drainit/integration/rollout"
)

// BenchmarkClusterDrain stops a pod b.N times a cell on the real parts of the TestCluster* tests
// (kubelet, containerd, API server, EndpointSlice controller, kube-proxy): the Service's load a
// Poisson stream, the pod deleted through the API as kubectl delete does. A cell is a drain
// (drainit's automatic quiet period, its 1 s one, its fixed 5 s wait, or no drainit and the
// kubelet's own `preStop: sleep: {seconds: 5}`) in one of two places: beside another ready pod,
// or as the Service's last ready pod. It measures what the rollout harness's drain table does,
// with the routing of a real kube-proxy and the timing of a real kubelet instead of the harness's
// own proxies and preStop caller:
//
//	go test -run '^$' -bench ClusterDrain -benchtime 10x ./integration/node -args -cluster-table FILE
//
// (root; `make bench` runs it). A sub-benchmark's first run is its warm-up (b.N = 1): the table
// has the last run of each.
func BenchmarkClusterDrain(b *testing.B) {
	need(b)
	c := cluster.Start(b)
	n := startClusterNode(b, c)
	url := "http://" + c.Service() + "/"
	var rows []*clusterRow
	for _, place := range clusterPlaces {
		var others []string
		if place.another {
			others = append(others, c.Answer(plainPod(c, n), 18081))
		}
		for _, d := range clusterDrains {
			row := &clusterRow{place: place, drain: d}
			rows = append(rows, row)
			row.failed = !b.Run(place.name+"/"+d.name, func(b *testing.B) {
				parent := c.T
				c.T = b // the cluster's helpers end the sub-benchmark that calls them
				defer func() { c.T = parent }()
				row.stops = nil // each run anew: the table has the last
				for range b.N {
					row.stops = append(row.stops, clusterStop(c, n, url, d, others))
				}
				row.report(b)
			})
		}
		if place.another {
			if err := deletePod(c, "web-b"); err != nil {
				b.Fatal(err)
			}
		}
	}
	if *clusterTable != "" {
		if err := os.WriteFile(*clusterTable, []byte(clusterMarkdown(rows)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

var (
	clusterTable = flag.String("cluster-table", "", "BenchmarkClusterDrain: write its results to this file (markdown)")
	clusterRate  = flag.Float64("cluster-rate", 100, "BenchmarkClusterDrain: new connections a second through the Service, a Poisson stream")
)

// clusterPlace is where the stopped pod stands in its Service.
type clusterPlace struct {
	name    string
	another bool // another pod (the test app alone) is ready beside it
}

func (p clusterPlace) title() string {
	if p.another {
		return "another pod ready"
	}
	return "the last ready pod"
}

var clusterPlaces = []clusterPlace{{"another-ready", true}, {"last-ready", false}}

// clusterDrain is how the pod drains: drainit's environment, or no drainit and the kubelet's
// preStop sleep.
type clusterDrain struct {
	name, title string
	env         map[string]string
	sleep       int // no drainit: the app alone, behind a preStop sleep of this many seconds
}

var clusterDrains = []clusterDrain{
	{name: "auto", title: "drainit, adaptive, quiet auto", env: map[string]string{"DRAINIT_DRAIN": "adaptive", "DRAINIT_DRAIN_QUIET": "auto", "DRAINIT_DRAIN_MAX": "20s"}},
	{name: "quiet1s", title: "drainit, adaptive, quiet 1s", env: map[string]string{"DRAINIT_DRAIN": "adaptive", "DRAINIT_DRAIN_QUIET": "1s", "DRAINIT_DRAIN_MAX": "20s"}},
	{name: "fixed5s", title: "drainit, fixed 5s", env: map[string]string{"DRAINIT_DRAIN": "fixed", "DRAINIT_DRAIN_DELAY": "5s"}},
	{name: "sleep5s", title: "no drainit: preStop sleep 5s", sleep: 5},
}

// stopResult is one stop, its times from the DELETE.
type stopResult struct {
	prestop   time.Duration // the kubelet's /prestop call (drainit only)
	stopped   time.Duration // the app's SIGTERM: it stops taking connections
	afterLast time.Duration // the app's SIGTERM after the pod's last connection
	lost      int           // the requests that failed while the pod was routed to
	rate      float64       // the automatic quiet period: the rate it judged the silence at (/s)
	needed    float64       // and the silence that needed (s)
	exitZero  bool          // drainit exited 0 (drainit only)
}

// clusterStop starts the pod web-a with d's drain, loads the Service until the pod has served
// 1.5 s of its share, deletes it and waits until the API has no more of it.
func clusterStop(c *cluster.Cluster, n *node, url string, d clusterDrain, others []string) stopResult {
	c.T.Helper()
	ctr := container{name: "app", app: []string{"serve", "-addr", ":18080", "-graceful"}}
	readyPath, readyPort := "/readyz", controlPort
	if d.sleep > 0 {
		// The app answers by the pod's name: as PID 1 of its container, its PID is web-b's.
		ctr.app = append(ctr.app, "-name", "web-a")
		ctr.noDrainit, ctr.preStop = true, fmt.Sprintf("kubelet-sleep %d", d.sleep)
		readyPath, readyPort = "/", 18080
	} else {
		ctr.preStop, ctr.env = "httpGet", map[string]string{"DRAINIT_GRACE_PERIOD": "30s"}
		for k, v := range d.env {
			ctr.env[k] = v
		}
	}
	log, ip := n.apiStart(c, "web-a", apiPod(c.T, "web-a", 18080, ctr, readyPath, readyPort))
	c.T.Cleanup(func() { _ = deletePod(c, "web-a") }) // when the stop failed half-way: the next makes its own
	a := c.Answer(ip, 18080)
	l := c.PoissonLoadServedBy(url, *clusterRate, append([]string{a}, others...)...)
	defer l.End()
	share := 1.5 * *clusterRate / float64(1+len(others))
	c.WaitFor("the pod to serve 1.5 s of its share", 30*time.Second, func() bool {
		served, _ := l.Count(a, time.Time{})
		return float64(served) >= share
	})
	t0 := time.Now()
	c.Must("DELETE", "/api/v1/namespaces/default/pods/web-a", "")
	var r stopResult
	if d.sleep == 0 {
		start, _ := logEvent(c.T, log, "stop sequence started by /prestop")
		r.prestop = start.Sub(t0)
		if d.env["DRAINIT_DRAIN"] == "adaptive" {
			_, over := logEvent(c.T, log, "adaptive drain over")
			r.rate, _ = over["rate"].(float64)
			if ms, ok := over["silence_needed"].(float64); ok {
				r.needed = ms / 1000
			}
		}
	}
	// The test app says so as it gets SIGTERM (from drainit, or from the kubelet after its sleep).
	term := log.await(c.T, 60*time.Second, "the app's SIGTERM", func(l logLine) bool {
		return strings.HasPrefix(l.text, "got app SIGTERM")
	})
	if d.sleep == 0 {
		_, exit := logEvent(c.T, log, "drainit exiting")
		r.exitZero = exit["status"] == 0.0
	}
	// The load goes on until the pod is gone: a connection routed to it after the app stopped
	// would fail.
	if err := deletePod(c, "web-a"); err != nil {
		c.T.Fatal(err)
	}
	l.End()
	last := l.Last(a)
	r.stopped, r.afterLast = term.at.Sub(t0), term.at.Sub(last)
	if len(others) > 0 {
		_, r.lost = l.Count("", time.Time{})
	} else {
		// The last ready pod: once it is not ready the Service has no endpoint and its
		// connections fail at kube-proxy (they time out), by design. Lost are those that began
		// before the pod's last connection, all routed to it, and those after that the pod
		// refused: routed to it once its app no longer listened.
		r.lost = l.FailedBy(last) + l.Refused(last)
	}
	if r.lost > 0 {
		c.T.Logf("%s: %d requests lost; the failures, with the pod's last connection at %s:\n%s", d.title, r.lost,
			last.Format("15:04:05.000"), strings.Join(l.Errs(), "\n"))
	}
	return r
}

// clusterRow is a cell's stops.
type clusterRow struct {
	place  clusterPlace
	drain  clusterDrain
	stops  []stopResult
	failed bool // a stop failed: the benchmark's log says why
}

func (r clusterRow) report(b *testing.B) {
	b.ReportMetric(median(r.stops, func(s stopResult) float64 { return s.stopped.Seconds() }), "s-delete-to-sigterm")
	b.ReportMetric(median(r.stops, func(s stopResult) float64 { return s.afterLast.Seconds() }), "s-after-last-conn")
	lost := 0
	for _, s := range r.stops {
		lost += s.lost
	}
	b.ReportMetric(float64(lost), "lost")
}

// median of f over the stops, as the rollout harness's tables take it.
func median(stops []stopResult, f func(stopResult) float64) float64 {
	return rollout.Median(values(stops, f))
}

func values(stops []stopResult, f func(stopResult) float64) []float64 {
	var v []float64
	for _, s := range stops {
		v = append(v, f(s))
	}
	slices.Sort(v)
	return v
}

// clusterMarkdown is the results as a table and what they rest on.
func clusterMarkdown(rows []*clusterRow) string {
	var w strings.Builder
	fmt.Fprintf(&w, `# Drains on a real kubelet and kube-proxy

`+"`make bench`"+` rewrites this file (`+"`BenchmarkClusterDrain`"+`, integration/node). Each stop: a pod
made through a real API server on a real kubelet and containerd (its own network namespace,
CNI ptp), in a Service that a real kube-proxy (iptables) routes by what the EndpointSlice
controller publishes, loaded until it has served 1.5 s of its share, then deleted through the API
as kubectl delete does. drainit's pods have an httpGet preStop to /prestop and a readiness probe
on /readyz (period 1 s); the pod without drainit has the kubelet's own `+"`preStop: sleep`"+` and
its probe on the app. The app is the test app with -graceful: on SIGTERM it stops listening and
finishes what is in flight. Lost: requests that failed while the pod was routed to (beside another
pod, every failure; as the last ready pod, those that began before its last connection, and
those it refused after: once it is not ready, the Service has no endpoint and connections fail at
kube-proxy, by design). The first stop of each cell is a warm-up, not counted.

Measured %s, drainit at %s, %s, a Poisson stream of %g new connections a second through the
Service.

`, time.Now().UTC().Format("2006-01-02 15:04 UTC"), describe(), machine(), *clusterRate)
	w.WriteString("| the pod | drain | stops | lost | DELETE to /prestop, median (max) | DELETE to the app's SIGTERM, median / max | the app's SIGTERM after the pod's last connection, median / max | auto: rate seen, silence needed (median) | drainit exited 0 |\n")
	w.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		k := len(r.stops)
		if k == 0 && !r.failed {
			continue // not run: -bench left it out
		}
		if r.failed || k == 0 {
			fmt.Fprintf(&w, "| %s | %s | failed: see the benchmark's log | | | | | | |\n", r.place.title(), r.drain.title)
			continue
		}
		lost, zero := 0, 0
		for _, s := range r.stops {
			lost += s.lost
			if s.exitZero {
				zero++
			}
		}
		spread := func(f func(stopResult) float64, sep string) string {
			v := values(r.stops, f)
			return fmt.Sprintf("%.2fs%s%.2fs", rollout.Median(v), sep, v[k-1])
		}
		pre, auto, exits := "-", "-", "-"
		if r.drain.sleep == 0 {
			pre = spread(func(s stopResult) float64 { return s.prestop.Seconds() }, " (") + ")"
			exits = fmt.Sprintf("%d of %d", zero, k)
		}
		if r.drain.name == "auto" {
			auto = fmt.Sprintf("%.0f/s, %.2fs", median(r.stops, func(s stopResult) float64 { return s.rate }),
				median(r.stops, func(s stopResult) float64 { return s.needed }))
		}
		fmt.Fprintf(&w, "| %s | %s | %d | %d | %s | %s | %s | %s | %s |\n", r.place.title(), r.drain.title, k, lost, pre,
			spread(func(s stopResult) float64 { return s.stopped.Seconds() }, " / "),
			spread(func(s stopResult) float64 { return s.afterLast.Seconds() }, " / "), auto, exits)
	}
	return w.String()
}

// machine says what the numbers were measured on.
func machine() string {
	var u unix.Utsname
	release := "Linux"
	if unix.Uname(&u) == nil {
		release = "Linux " + unix.ByteSliceToString(u.Release[:])
	}
	return fmt.Sprintf("%s, %d CPUs, %s", release, runtime.NumCPU(), runtime.Version())
}

// describe is the commit the benchmark ran at, as git describes it (dirty: with changes).
func describe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "an unknown commit"
	}
	return strings.TrimSpace(string(out))
}
