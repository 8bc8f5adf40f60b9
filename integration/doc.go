// Package integration tests drainit's PID 1 core on the real binary and the real kernel: as PID 1
// of a fresh PID namespace (unshare, needs root), as a child subreaper, and on a pseudo-terminal.
// The container-runtime and kubelet tests live in the subpackages podman and kubelet.
//
// The package has no code of its own besides this comment: everything is in _test.go files.
// TestMain builds cmd/drainit and integration/testapp once (static, through testbin); the
// helpers in harness_test.go start drainit in either mode (PID 1 through integration/pod, the
// repository's one launcher), read its output lines with deadlines (integration/lines) and look
// at processes through internal/proc. Tests that need root skip with the reason when it is
// missing, except under CI=true, where they fail instead (integration/testenv.SkipUnlessCI).
package integration
