// Package podman tests drainit as PID 1 of a real container: podman with runc runs an image
// built FROM scratch that holds only the static drainit (the ENTRYPOINT) and the static
// integration/testapp, and `podman stop` drives the stop sequence the way `docker stop` does.
// Two variants are built from the same binaries: one with STOPSIGNAL SIGQUIT (as every image FROM
// nginx), and one with testapp alone, in front of which `podman run --init --init-path` puts the
// host's drainit as PID 1. README.md has what podman was seen to do.
//
// The package has no code of its own besides this comment: everything is in _test.go files.
// TestMain builds both binaries (CGO_ENABLED=0) and the images once per run, in a temporary
// directory that also holds podman's storage, run state and event log; podman is pointed at the
// project's containers.conf and storage.conf (copies with that directory filled in) through
// CONTAINERS_CONF and CONTAINERS_STORAGE_CONF, so nothing system-wide is configured or pulled.
//
// Needs root, podman and runc (Debian: apt-get install --no-install-recommends podman runc).
// Without them the tests skip with the reason, except under CI=true, where they fail instead.
//
//	go test ./integration/podman/
package podman
