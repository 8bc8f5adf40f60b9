//go:build !linux

package drainwatch

// systemAppCounter is nil: no sock_diag outside Linux.
func systemAppCounter(RecordConfig) appCounter { return nil }
