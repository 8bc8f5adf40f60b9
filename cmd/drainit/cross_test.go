package main

import (
	"bytes"
	"debug/macho"
	"debug/pe"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// crossTargets are the non-Linux platforms drainit and drainit-check are built for, so that
// drainit check runs where the manifests are (a developer's Mac or Windows machine). `make
// cross` builds the same.
var crossTargets = []struct {
	goos, goarch string
	cpu          uint32 // macho.Cpu or pe machine type
}{
	{"darwin", "amd64", uint32(macho.CpuAmd64)},
	{"darwin", "arm64", uint32(macho.CpuArm64)},
	{"windows", "amd64", pe.IMAGE_FILE_MACHINE_AMD64},
	{"windows", "arm64", pe.IMAGE_FILE_MACHINE_ARM64},
}

// Every cross build of drainit and drainit-check compiles and is an executable of its platform
// and CPU, and drainit carries the message that turns an attempt to run an app there into a
// clear refusal: a Linux-only call slipping into a file without a build tag fails here, not on a
// user's laptop.
func TestCrossBuild(t *testing.T) {
	testenv.SkipShort(t, "cross-compiles drainit and drainit-check four times each")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds the binaries under test: %v", err)
	}
	dir := t.TempDir()
	for _, tc := range crossTargets {
		for _, pkg := range []string{".", "../../check/cmd/drainit-check"} {
			name := filepath.Base(pkg)
			if pkg == "." {
				name = "drainit"
			}
			t.Run(tc.goos+"/"+tc.goarch+"/"+name, func(t *testing.T) {
				t.Parallel()
				bin := filepath.Join(dir, name+"-"+tc.goos+"-"+tc.goarch)
				crossBuild(t, goTool, tc.goos, tc.goarch, tc.cpu, bin, pkg)
				if name != "drainit" {
					return
				}
				data, err := os.ReadFile(bin)
				if err != nil {
					t.Fatal(err)
				}
				if want := "running an app needs Linux"; !bytes.Contains(data, []byte(want)) {
					t.Errorf("no %q in the binary: the run subcommand is not the non-Linux refusal", want)
				}
			})
		}
	}
}

// crossBuild builds pkg for goos/goarch into bin and checks that it is an executable of that
// platform and CPU.
func crossBuild(t *testing.T, goTool, goos, goarch string, wantCPU uint32, bin, pkg string) {
	t.Helper()
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=%s GOARCH=%s go build %s: %v\n%s", goos, goarch, pkg, err, out)
	}
	var cpu uint32
	switch goos {
	case "darwin":
		f, err := macho.Open(bin)
		if err != nil {
			t.Fatalf("not a Mach-O executable: %v", err)
		}
		defer f.Close()
		if f.Type != macho.TypeExec {
			t.Errorf("Mach-O type %v, want an executable", f.Type)
		}
		cpu = uint32(f.Cpu)
	case "windows":
		f, err := pe.Open(bin)
		if err != nil {
			t.Fatalf("not a PE executable: %v", err)
		}
		defer f.Close()
		cpu = uint32(f.Machine)
	}
	if cpu != wantCPU {
		t.Errorf("CPU type %#x, want %#x", cpu, wantCPU)
	}
}

// drainit builds, as `go install` builds it (its entry point linked where it is written for), for
// every Linux architecture the Go toolchain knows, including those the release does not ship: a
// signal constant that one of them lacks (mips has no SIGSTKFLT) fails here, and so would an
// entry point the linker refuses.
func TestBuildsOnEveryLinuxArch(t *testing.T) {
	testenv.SkipShort(t, "compiles drainit for every Linux GOARCH")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds the binaries under test: %v", err)
	}
	out, err := exec.Command(goTool, "tool", "dist", "list").Output()
	if err != nil {
		t.Fatalf("go tool dist list: %v", err)
	}
	for plat := range strings.FieldsSeq(string(out)) {
		goarch, ok := strings.CutPrefix(plat, "linux/")
		if !ok {
			continue
		}
		t.Run(goarch, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(goTool, "build", "-o", os.DevNull, ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOARCH=%s go build: %v\n%s", goarch, err, out)
			}
		})
	}
}
