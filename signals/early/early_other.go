//go:build !linux

package early

// Release does nothing off Linux: there drainit runs no app, so nothing registers its signals
// at start (see the Linux early.go) and they keep their default effect throughout.
func Release() {}
