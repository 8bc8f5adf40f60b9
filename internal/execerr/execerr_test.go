package execerr

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"
)

// execErr is what execve says for path: the error Explain is given in drainit.
func execErr(t *testing.T, path string) error {
	t.Helper()
	pid, err := syscall.ForkExec(path, []string{path}, &syscall.ProcAttr{})
	if err == nil {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		t.Fatalf("%s ran; the case needs an exec that fails", path)
	}
	return err
}

// write makes a file of the given text and mode in dir.
func write(t *testing.T, dir, name string, text []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, text, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// dynamicProgram returns the bytes of a dynamically linked program of this machine, and the
// loader it names.
func dynamicProgram(t *testing.T) ([]byte, string) {
	t.Helper()
	for _, name := range []string{"true", "ls", "sh"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if f, ok := parseELF(b); ok && f.interp != "" {
			return b, f.interp
		}
	}
	testenv.SkipUnlessCI(t, "no dynamically linked program on this machine to patch")
	return nil, ""
}

// TestExplainNamesTheRightFile: each way an exec fails is explained with the file it is about,
// from the error the kernel really gives, with a shell's status.
func TestExplainNamesTheRightFile(t *testing.T) {
	dir := t.TempDir()
	prog, loader := dynamicProgram(t)
	// The same program naming a loader that is not there (as in an image FROM scratch): a path
	// of the same length, so that nothing else in the file moves.
	gone := "/" + strings.Repeat("x", len(loader)-1)
	noLoader := write(t, dir, "no-loader", bytes.Replace(prog, []byte(loader+"\x00"), []byte(gone+"\x00"), 1), 0o755)
	// The same program for another machine: the kernel refuses it with ENOEXEC.
	other := bytes.Clone(prog)
	var bo binary.ByteOrder = binary.LittleEndian
	if other[5] == 2 {
		bo = binary.BigEndian
	}
	foreign := uint16(183) // aarch64
	if hostMachine() == foreign {
		foreign = 62 // x86_64
	}
	bo.PutUint16(other[0x12:], foreign)
	otherMachine := write(t, dir, "other-machine", other, 0o755)
	// A script whose interpreter is a script whose interpreter is missing.
	missing := filepath.Join(dir, "no-such-interpreter")
	inner := write(t, dir, "inner", []byte("#!"+missing+" -e\necho\n"), 0o755)

	for _, c := range []struct {
		name, path string
		status     int
		says       []string
	}{
		{"missing interpreter", write(t, dir, "script", []byte("#! "+missing+" -x\n"), 0o755), 127,
			[]string{"no such file or directory", "the interpreter its #! line names, " + missing + ", does not exist"}},
		{"interpreter that cannot run", write(t, dir, "outer", []byte("#!"+inner+"\n"), 0o755), 127,
			[]string{"its #! line names, " + inner + ", cannot be run"}},
		{"missing loader", noLoader, 127,
			[]string{"the dynamic loader it names, " + gone + ", does not exist", "not linked statically"}},
		{"missing file", filepath.Join(dir, "no-such-app"), 127, []string{"no-such-app: no such file or directory"}},
		{"directory", dir, 126, []string{"permission denied: it is a directory"}},
		{"not executable", write(t, dir, "plain", []byte("#!/bin/sh\n"), 0o644), 126,
			[]string{"permission denied: not executable (mode 0644)"}},
		{"another machine", otherMachine, 126,
			[]string{"exec format error: a program for " + machineName(foreign) + ", not for this machine (" + machineName(hostMachine()) + ")"}},
		{"no #! line", write(t, dir, "bare", []byte("echo hello\n"), 0o755), 126,
			[]string{"exec format error: not a program, and no #! line says what runs it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := execErr(t, c.path)
			if os.Geteuid() == 0 && c.name == "not executable" {
				// root may read it, but execve still wants an execute bit.
				if !errors.Is(err, unix.EACCES) {
					t.Fatalf("exec of a 0644 file: %v, want EACCES", err)
				}
			}
			status, reason := Explain(c.path, err)
			if !errors.Is(reason, err) {
				t.Errorf("Explain(%q) = %v: does not wrap %v", c.path, reason, err)
			}
			if status != c.status || !strings.HasPrefix(reason.Error(), c.path+": ") {
				t.Errorf("Explain(%q) = %d, %q; want %d and a reason starting with the path", c.path, status, reason, c.status)
			}
			for _, s := range c.says {
				if !strings.Contains(reason.Error(), s) {
					t.Errorf("Explain(%q) = %q; want it to say %q", c.path, reason, s)
				}
			}
		})
	}
}

// TestExplainProcessLimit: fork's EAGAIN (a cgroup's pids.max reached; the kernel's own error is
// seen by the podman test that reaches one) and ENOMEM say what ran out, not the file.
func TestExplainProcessLimit(t *testing.T) {
	p := write(t, t.TempDir(), "app", []byte("#!/bin/sh\n"), 0o755)
	for _, c := range []struct {
		err  error
		says string
	}{
		{unix.EAGAIN, "resource temporarily unavailable: no process can be created: the container's process limit is reached (its cgroup's pids.max"},
		{unix.ENOMEM, "cannot allocate memory: not enough memory to start a process"},
	} {
		status, reason := Explain(p, c.err)
		if status != 126 || !strings.Contains(reason.Error(), c.says) || !errors.Is(reason, c.err) {
			t.Errorf("Explain(%v) = %d, %q; want 126 and %q", c.err, status, reason, c.says)
		}
	}
}

// TestExplainNoexecMount: a file that is executable but on a file system mounted noexec.
func TestExplainNoexecMount(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipUnlessCI(t, "mounting a noexec tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOEXEC, "size=1m"); err != nil {
		t.Fatalf("mount a noexec tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	p := write(t, dir, "app", []byte("#!/bin/sh\n"), 0o755)
	status, reason := Explain(p, execErr(t, p))
	if status != 126 || !strings.Contains(reason.Error(), "permission denied: its file system is mounted noexec") {
		t.Errorf("Explain = %d, %q; want 126 and the noexec mount named", status, reason)
	}
}

// FuzzParseELF: whatever a file's first bytes are, parseELF never panics, and what it reads
// (the machine, the loader when it lies in those bytes) is what debug/elf reads.
func FuzzParseELF(f *testing.F) {
	for _, name := range []string{"true", "sh"} {
		if p, err := exec.LookPath(name); err == nil {
			if b, err := os.ReadFile(p); err == nil && len(b) > head {
				f.Add(b[:head])
			}
		}
	}
	f.Add([]byte("\x7fELF\x01\x01\x01"))
	f.Add([]byte("#!/bin/sh -e\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseELF(b)
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return // debug/elf wants more than the head: nothing to compare
		}
		if !ok || got.machine != uint16(ef.Machine) {
			t.Fatalf("parseELF = %+v, %v; debug/elf reads machine %d", got, ok, ef.Machine)
		}
		want := ""
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				if p.Off <= uint64(len(b)) && p.Filesz <= uint64(len(b))-p.Off {
					want = string(bytes.TrimRight(b[p.Off:p.Off+p.Filesz], "\x00"))
				}
				break
			}
		}
		if got.interp != want {
			t.Fatalf("parseELF reads loader %q; debug/elf's program headers give %q", got.interp, want)
		}
	})
}

// FuzzShebang: the interpreter read from a #! line is a non-empty word of that line with no
// blank or newline in it.
func FuzzShebang(f *testing.F) {
	f.Add([]byte("#!/bin/sh -e\n"))
	f.Add([]byte("#! \t/usr/bin/env python3\r\n"))
	f.Add([]byte("#!\n/bin/sh"))
	f.Fuzz(func(t *testing.T, b []byte) {
		interp, ok := shebang(b)
		if !ok {
			return
		}
		line, _, _ := bytes.Cut(b, []byte("\n"))
		if interp == "" || strings.ContainsAny(interp, " \t\n") || !bytes.Contains(line, []byte(interp)) {
			t.Fatalf("shebang(%q) = %q", b, interp)
		}
	})
}
