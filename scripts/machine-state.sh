#!/usr/bin/env bash
# Prints what of the machine's state the tests could change and must leave as they found it:
# kernel settings the kubelet, kube-proxy and container runtimes write, the iptables rules,
# podman's own store, network namespaces, mounts, files in the temporary directory, and processes
# of the programs the tests run. .ci/run prints it before and after `make test` and fails on a
# difference: a leftover is a surprise for whoever runs the tests on their own machine.
set -uo pipefail

# Not the netfilter settings: kube-proxy's are its network namespace's own, and they appear
# only once a module is loaded, which is no setting of ours to undo.
echo "## sysctl"
for k in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes kernel.core_pattern kernel.pid_max \
  vm.max_map_count fs.inotify.max_user_instances fs.inotify.max_user_watches \
  net.ipv4.ip_forward net.ipv4.conf.all.route_localnet; do
  echo "$k = $(sysctl -n "$k" 2>/dev/null || echo absent)"
done

# Rules and chains, without their packet counters.
for t in iptables ip6tables; do
  echo "## $t"
  "$t-save" 2>/dev/null | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//'
done

echo "## podman images and manifests (the machine's store)"
podman images -a --noheading --format '{{.ID}} {{.Repository}}:{{.Tag}}' 2>/dev/null | sort
echo "## network namespaces"
ip netns list 2>/dev/null | sort
# /run/netns is made a mount point by the first `ip netns add` on a machine and stays one, for
# every user of ip netns: not ours to remove.
echo "## CNI's cache (/var/lib/cni/results)"
ls -A /var/lib/cni/results 2>/dev/null | sort
echo "## mounts"
findmnt -rn -o TARGET | grep -vx /run/netns | sort
echo "## ${TMPDIR:-/tmp}"
ls -A "${TMPDIR:-/tmp}" | grep -E '^(drainit|go-build|kubelet|containerd|podman|etcd|tmp\.)' | sort
echo "## processes"
ps -eo comm= | grep -xE 'drainit|testapp|kubelet|kube-apiserver|kube-controller|kube-proxy|etcd|containerd.*|runc|conmon|podman|nginx|haproxy|apache2|php-fpm.*|java|tini|dumb-init|catatonit' \
  | sort | uniq -c
exit 0
