#!/bin/sh
# make demo: build drainit and the test app (static) into bin/, then stop one of two pods under
# steady load in each scenario at endpoint propagation delays of 0.2 s, 1 s and 3 s, side by side,
# and print the table (integration/rollout; RESULTS.md there explains it). Needs root for the PID
# namespaces; loopback only. The nginx rows run the system's nginx (Debian: nginx-light) and are
# skipped, with a line saying so, where it is not installed. Extra arguments go to the harness,
# e.g. -repeat 20 or -json. On a machine too busy for the harness to time a run (its own timers
# or load generator late by more than a fifth of a request), the table says "noisy" where a
# cut, a client timeout or a stop time in such a run would fail a claim, the last lines say how
# busy the machine was, and that alone does not fail the demo (exit 0): it says nothing about
# drainit. A request lost otherwise fails it whatever the load.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}
mkdir -p bin
make --no-print-directory drainit GO="$GO" VERSION="$VERSION" BIN=bin/drainit
CGO_ENABLED=0 "$GO" build -trimpath -ldflags '-s -w' -o bin/testapp ./integration/testapp
"$GO" build -o bin/rollout ./integration/rollout/cmd/rollout

run="bin/rollout -drainit bin/drainit -testapp bin/testapp -q"
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		run="sudo $run"
	else
		echo "demo: needs root (each pod is PID 1 of its own PID namespace)" >&2
		exit 1
	fi
fi
echo "demo: stopping one of two pods under load, 15 ways x 3 propagation delays (about 40 s)..." >&2
# shellcheck disable=SC2086 # $run is a command line
exec $run "$@"
