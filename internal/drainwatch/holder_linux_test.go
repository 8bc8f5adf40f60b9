package drainwatch

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
)

// TestHeldByTree: a listener of this process is held by its tree, not by a child's; a port with
// no listener here is not known.
func TestHeldByTree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	to := ln.Addr().(*net.TCPAddr).AddrPort()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	if ours, known := HeldByTree(to, os.Getpid()); !ours || !known {
		t.Errorf("own listener: ours %v, known %v; want both", ours, known)
	}
	if ours, known := HeldByTree(to, child.Process.Pid); ours || !known {
		t.Errorf("from a child's tree: ours %v, known %v; want known and not ours", ours, known)
	}
	ln6, err := net.Listen("tcp", "[::]:0") // a wildcard listener takes 127.0.0.1 too
	if err == nil {
		defer ln6.Close()
		port := uint16(ln6.Addr().(*net.TCPAddr).Port)
		if ours, known := HeldByTree(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), os.Getpid()); !ours || !known {
			t.Errorf("wildcard listener: ours %v, known %v; want both", ours, known)
		}
	}
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := free.Addr().(*net.TCPAddr).AddrPort()
	free.Close()
	if _, known := HeldByTree(addr, os.Getpid()); known {
		t.Error("a port nobody listens on is known")
	}
}
