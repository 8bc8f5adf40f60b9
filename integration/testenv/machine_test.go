package testenv

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestSystemFiles(t *testing.T) {
	root := WriteTree(t, map[string]string{
		"loadavg":      "0.42 0.30 0.20 1/123 4567\n",
		"cpuinfo":      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Some CPU @ 2.00GHz\n\nprocessor\t: 1\nmodel name\t: Some CPU @ 2.00GHz\n",
		"net/sockstat": "sockets: used 120\nTCP: inuse 5 orphan 0 tw 7 alloc 9 mem 1\nUDP: inuse 1 mem 0\n",
	})
	if l, err := LoadAverage(root); err != nil || l != "0.42" {
		t.Errorf("LoadAverage = %q, %v", l, err)
	}
	if m, err := CPUModel(root); err != nil || m != "Some CPU @ 2.00GHz" {
		t.Errorf("CPUModel = %q, %v", m, err)
	}
	tcp, err := SockstatTCP(root)
	if err != nil || tcp["tw"] != 7 || tcp["alloc"] != 9 || tcp["inuse"] != 5 {
		t.Errorf("SockstatTCP = %v, %v", tcp, err)
	}
	if _, err := SockstatTCP(WriteTree(t, map[string]string{"net/sockstat": "TCP: inuse x\n"})); err == nil || !strings.Contains(err.Error(), "inuse") {
		t.Errorf("SockstatTCP on a bad counter: %v", err)
	}
	for name, f := range map[string]func(string) error{
		"LoadAverage": func(r string) error { _, err := LoadAverage(r); return err },
		"CPUModel":    func(r string) error { _, err := CPUModel(r); return err },
		"SockstatTCP": func(r string) error { _, err := SockstatTCP(r); return err },
	} {
		if err := f(t.TempDir()); err == nil {
			t.Errorf("%s: no error without the file", name)
		}
		if err := f("/proc"); err != nil && name != "CPUModel" {
			t.Errorf("%s on the live /proc: %v", name, err)
		}
	}
}

// A child is in the process table until it is reaped, killed or not; the test process spends
// time on a CPU; its mount namespace has /.
func TestProcessFiles(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := cmd.Process.Pid
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !ProcessExists("/proc", child) {
		t.Errorf("the killed child %d, not yet reaped, does not exist", child)
	}
	_ = cmd.Wait()
	if ProcessExists("/proc", child) {
		t.Errorf("the reaped child %d still exists", child)
	}
	if CPUTime("/proc", os.Getpid()) <= 0 {
		t.Error("CPUTime(self) is 0")
	}
	if points, err := MountPoints("/proc", os.Getpid(), "/"); err != nil || !slices.Contains(points, "/") {
		t.Errorf("MountPoints(/) = %v, %v; want / among them", points, err)
	}
}
