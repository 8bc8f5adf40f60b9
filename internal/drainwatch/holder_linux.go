package drainwatch

import (
	"errors"
	"net/netip"
	"os"

	"github.com/drainit/drainit/internal/proc"
)

// HeldByTree reports whether the listener that a connection to `to` reaches, in drainit's
// network namespace, is held by drainit (pid self) or a process below it: the app, what the app
// started, what it left to drainit. A ready probe that passes on a port held by some other
// process (a sidecar sharing the pod's network, a previous instance) says nothing about the app.
// known is false when no listener of the namespace is on that port and address (the target is
// elsewhere), or the tables cannot be read.
func HeldByTree(to netip.AddrPort, self int) (ours, known bool) {
	return heldByTree(procRoot, to, self)
}

func heldByTree(root string, to netip.AddrPort, self int) (ours, known bool) {
	ls, err := listeningSockets(nil, root)
	if err != nil {
		return false, false
	}
	addr := to.Addr().Unmap()
	var exact, wildcard []uint64
	for _, l := range ls {
		if l.Port != to.Port() {
			continue
		}
		switch la := l.Addr.Unmap(); {
		case la == addr:
			exact = append(exact, l.inode)
		case la.IsUnspecified() && (l.v6 || addr.Is4()):
			// 0.0.0.0 takes IPv4 connections; :: takes both (unless IPV6_V6ONLY, which the
			// table does not show).
			wildcard = append(wildcard, l.inode)
		}
	}
	// The kernel hands a connection to the listener bound to its address before a wildcard one.
	candidates := exact
	if len(candidates) == 0 {
		candidates = wildcard
	}
	if len(candidates) == 0 {
		return false, false
	}
	for _, pid := range append([]int{self}, proc.Below(root, self)...) {
		held, err := proc.SocketInodes(root, pid)
		if errors.Is(err, os.ErrPermission) {
			return false, false // a process of the tree drainit cannot look into (setuid) may hold it
		}
		for _, in := range candidates {
			if held[in] {
				return true, true
			}
		}
	}
	return false, true
}
