//go:build unix

package check

import (
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
)

const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: [{name: c}]\n"

// readInTime is ReadInputs, failing the test if it has not returned in 20 s: a regression here
// blocks on a pipe for good. The pipe is then opened for writing, which lets the reader go.
func readInTime(t *testing.T, fifo string, args []string, opt ReadOptions) *Inputs {
	t.Helper()
	type result struct {
		in  *Inputs
		err error
	}
	done := make(chan result, 1)
	go func() {
		in, err := ReadInputs(args, nil, opt)
		done <- result{in, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("ReadInputs(%q): %v", args, r.err)
		}
		return r.in
	case <-time.After(20 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatalf("ReadInputs(%q) blocks on the pipe %s", args, fifo)
		return nil
	}
}

// TestKustomizationNotRegular: a kustomization that is a pipe, or a link to an endless device,
// is not read as one (it would block the walk, or fill the memory); the manifests beside it are
// read, by a walk and by --lenient's look up the directories.
func TestKustomizationNotRegular(t *testing.T) {
	for name, mk := range map[string]func(string) error{
		"kustomization.yaml": func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"kustomization.yml":  func(p string) error { return os.Symlink("/dev/zero", p) },
		"Kustomization":      func(p string) error { return os.Symlink("/dev/urandom", p) },
	} {
		dir := t.TempDir()
		deploy := filepath.Join(dir, "deploy.yaml")
		if err := os.WriteFile(deploy, []byte(deployment), 0o644); err != nil {
			t.Fatal(err)
		}
		k := filepath.Join(dir, name)
		if err := mk(k); err != nil {
			testenv.SkipUnlessCI(t, name+": "+err.Error())
		}
		for _, c := range []struct {
			args []string
			opt  ReadOptions
		}{{[]string{dir}, ReadOptions{}}, {[]string{deploy}, ReadOptions{Lenient: true}}} {
			in := readInTime(t, k, c.args, c.opt)
			if in.Workloads != 1 || len(in.Problems) != 0 || len(in.Notes) != 0 {
				t.Errorf("%s, %q: workloads %d, problems %+v, notes %q", name, c.args, in.Workloads, in.Problems, in.Notes)
			}
		}
	}
}

// TestLenientPipe: --lenient on a pipe decides from what it read once: a broken manifest is a
// problem, as it is from a file, not skipped because a second read found the pipe empty.
func TestLenientPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "manifest")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		testenv.SkipUnlessCI(t, "no named pipes here: "+err.Error())
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = f.WriteString("apiVersion: v1\nkind: Pod\nspec: [\n")
	}()
	in := readInTime(t, fifo, []string{fifo}, ReadOptions{Lenient: true})
	want := []Problem{{File: fifo, Line: 3, Message: "not valid YAML: did not find expected node content"}}
	if !reflect.DeepEqual(in.Problems, want) {
		t.Errorf("problems %+v, want %+v", in.Problems, want)
	}
}

// TestLenientDevice: --lenient on an endless device reads a bounded part of it.
func TestLenientDevice(t *testing.T) {
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(dev); err != nil {
			testenv.SkipUnlessCI(t, dev+": "+err.Error())
		}
		if in := readTree(t, []string{dev}, ReadOptions{Lenient: true}); in.Workloads != 0 {
			t.Errorf("%s: workloads %d", dev, in.Workloads)
		}
	}
}
