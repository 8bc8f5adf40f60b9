// Package rollout is the zero-downtime harness: it stops one pod of a small service the way a
// rolling update does, under steady load, and counts what the clients lost.
//
// The pods (integration/pod, each in network namespaces of its own unless Config.HostNetwork)
// sit behind Balancers, the kube-proxy stand-in, or behind pooling L7 proxies (Scenario.Pooled);
// the kubelet simulator (integration/kubelet) stops the first one while Load runs. Every failure
// is recorded with its kind and time since the deletion, and the Balancer tells a request cut in
// flight from one dropped as it arrived. A run the machine was too busy to time is noisy
// (Result.Noisy) and cannot fail a claim on what timing decides. Checks holds the scenarios to
// their claims: loss without a drain, none with one, the adaptive drains' stop bounds.
//
// docs/benchmarks.md ("How the rollout harness works") has the model in full: what each stand-in
// does and why, how cut and dropped requests are told apart, the adaptive and L7 scenarios, what
// a noisy run forgives, what the runs show about nginx, and why this is not in bench/.
package rollout
