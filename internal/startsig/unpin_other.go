//go:build !linux

package startsig

// Unpin does nothing: the entry point, and its pin, are Linux's only.
func Unpin() error { return nil }
