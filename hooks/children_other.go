//go:build !linux

package hooks

// Children exists off Linux only so that configurations parse (NewExec takes one): no exec
// hook runs there, so there is nothing to route. See children.go for the Linux type.
type Children struct{}
