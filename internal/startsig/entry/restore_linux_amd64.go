//go:build !noentrypoint

package entry

// restore is catch's way back to the kernel (entry_linux_amd64.s).
//
//lint:ignore U1000 the entry point refers to it, no Go code does
func restore()
