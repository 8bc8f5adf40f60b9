package release

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
)

// platform is one target the release must cover: its names in Go, in the archives, in the
// packages, and the emulator that runs it on an amd64 machine.
type platform struct {
	goos, goarch string
	name         string // in the archive and bare-file names
	deb, apk     string // the package architectures (Linux only)
	machine      elf.Machine
	qemu         string // qemu-user-static binary; "" runs natively (amd64)
}

// platforms are what the issue asks for: every Linux architecture tini ships that Go supports,
// and darwin and windows for `drainit check`.
var platforms = []platform{
	{"linux", "amd64", "linux_amd64", "amd64", "x86_64", elf.EM_X86_64, ""},
	{"linux", "arm64", "linux_arm64", "arm64", "aarch64", elf.EM_AARCH64, "qemu-aarch64-static"},
	{"linux", "arm", "linux_armv7", "armhf", "armv7", elf.EM_ARM, "qemu-arm-static"},
	{"linux", "ppc64le", "linux_ppc64le", "ppc64el", "ppc64le", elf.EM_PPC64, "qemu-ppc64le-static"},
	{"linux", "s390x", "linux_s390x", "s390x", "s390x", elf.EM_S390, "qemu-s390x-static"},
	{"linux", "riscv64", "linux_riscv64", "riscv64", "riscv64", elf.EM_RISCV, "qemu-riscv64-static"},
	{"darwin", "amd64", "darwin_amd64", "", "", 0, ""},
	{"darwin", "arm64", "darwin_arm64", "", "", 0, ""},
	{"windows", "amd64", "windows_amd64", "", "", 0, ""},
	{"windows", "arm64", "windows_arm64", "", "", 0, ""},
}

// TestEveryArtifactIsThere: the archive, the bare binaries (drainit and drainit-check) and the
// SBOM for each platform, both
// packages for each Linux architecture, the image archive, and checksums.txt covering every
// archive, binary, package and SBOM.
func TestEveryArtifactIsThere(t *testing.T) {
	d := need(t)
	v := d.Meta.Version
	var want []string
	for _, p := range platforms {
		archive, bare, check := "drainit_"+v+"_"+p.name+".tar.gz", "drainit_"+v+"_"+p.name, "drainit-check_"+v+"_"+p.name
		if p.goos == "windows" {
			archive, bare, check = "drainit_"+v+"_"+p.name+".zip", bare+".exe", check+".exe"
		}
		want = append(want, archive, bare, check, archive+".sbom.json")
		if p.goos == "linux" {
			// nfpm turns the semver pre-release into the package formats' own: ~ sorts before
			// the release in dpkg, _ is apk's separator.
			want = append(want, "drainit_"+strings.Replace(v, "-", "~", 1)+"_"+p.deb+".deb",
				"drainit_"+strings.Replace(v, "-", "_", 1)+"_"+p.apk+".apk")
		}
	}
	for _, name := range want {
		if _, err := os.Stat(filepath.Join(d.Dir, name)); err != nil {
			t.Errorf("missing from dist/: %v", err)
		}
		if !d.Sums.Has(name) {
			t.Errorf("%s is not in checksums.txt", name)
		}
	}
	if _, err := os.Stat(d.Image()); err != nil {
		t.Errorf("missing the image archive: %v", err)
	}
	// Every line verifies, against the file of that name in dist/.
	for name, sum := range d.Sums {
		got, err := sha256File(filepath.Join(d.Dir, name))
		if err != nil {
			t.Errorf("checksums.txt lists %s: %v", name, err)
		} else if got != sum {
			t.Errorf("checksums.txt: %s has sha256 %s, the file %s", name, sum, got)
		}
	}
	if len(d.Sums) != len(want) {
		t.Errorf("checksums.txt has %d lines, want %d (one per archive, binary, package and SBOM)", len(d.Sums), len(want))
	}
}

// TestArchivesHoldBothBinaries: each archive holds drainit and drainit-check side by side (where
// `drainit check` finds it), the same bytes as the bare binaries, and the license.
func TestArchivesHoldBothBinaries(t *testing.T) {
	d := need(t)
	for _, p := range platforms {
		v := d.Meta.Version
		archive, ext := "drainit_"+v+"_"+p.name+".tar.gz", ""
		if p.goos == "windows" {
			archive, ext = "drainit_"+v+"_"+p.name+".zip", ".exe"
		}
		files, err := archiveFiles(filepath.Join(d.Dir, archive))
		if err != nil {
			t.Errorf("%s: %v", archive, err)
			continue
		}
		for _, cmd := range []string{"drainit", "drainit-check"} {
			want, err := os.ReadFile(filepath.Join(d.Dir, cmd+"_"+v+"_"+p.name+ext))
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := files[cmd+ext]; !ok || !bytes.Equal(got, want) {
				t.Errorf("%s: %s%s missing or not the release's bare binary (held: %d bytes)", archive, cmd, ext, len(got))
			}
		}
		if _, ok := files["LICENSE"]; !ok {
			t.Errorf("%s holds no LICENSE", archive)
		}
		// The README's links into docs/ must not be dead in the archive.
		for _, m := range docsLink.FindAllStringSubmatch(string(files["README.md"]), -1) {
			if _, ok := files[m[1]]; !ok {
				t.Errorf("%s: its README.md links to %s, which it does not hold", archive, m[1])
			}
		}
		if len(files["README.md"]) == 0 {
			t.Errorf("%s holds no README.md", archive)
		}
	}
}

// docsLink is a Markdown link into docs/, its file without an anchor.
var docsLink = regexp.MustCompile(`\]\((docs/[^)#]+)`)

// archiveFiles reads every regular file of a .tar.gz or .zip archive by name.
func archiveFiles(path string) (map[string][]byte, error) {
	files := map[string][]byte{}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
			files[f.Name] = b
		}
		return files, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = b
	}
}

// TestSBOMsNameTheirArchive: each SBOM is an SPDX document about its own archive's contents,
// listing the Go modules drainit is built from.
func TestSBOMsNameTheirArchive(t *testing.T) {
	d := need(t)
	for _, p := range platforms {
		archive := "drainit_" + d.Meta.Version + "_" + p.name + ".tar.gz"
		if p.goos == "windows" {
			archive = strings.TrimSuffix(archive, ".tar.gz") + ".zip"
		}
		b, err := os.ReadFile(filepath.Join(d.Dir, archive+".sbom.json"))
		if err != nil {
			t.Error(err)
			continue
		}
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Name        string `json:"name"`
			Packages    []struct {
				Name string `json:"name"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Errorf("%s.sbom.json: %v", archive, err)
			continue
		}
		if !strings.HasPrefix(doc.SPDXVersion, "SPDX-2.") {
			t.Errorf("%s.sbom.json: spdxVersion %q, want an SPDX 2 document", archive, doc.SPDXVersion)
		}
		if !strings.Contains(doc.Name, archive) {
			t.Errorf("%s.sbom.json describes %q, not its archive", archive, doc.Name)
		}
		var names []string
		for _, pkg := range doc.Packages {
			names = append(names, pkg.Name)
		}
		for _, mod := range []string{"github.com/rs/zerolog", "golang.org/x/sys"} {
			if !strings.Contains(strings.Join(names, " "), mod) {
				t.Errorf("%s.sbom.json does not list %s (packages: %v)", archive, mod, names)
			}
		}
	}
}

// TestLinuxBinariesAreStaticAndTellTheirVersion: each Linux binary is a static executable for its
// architecture (no interpreter, no shared library), and reports the release's version and commit
// when run, natively or under qemu-user-static.
func TestLinuxBinariesAreStaticAndTellTheirVersion(t *testing.T) {
	d := need(t)
	for _, p := range platforms {
		if p.goos != "linux" {
			continue
		}
		t.Run(p.goarch, func(t *testing.T) {
			bin := filepath.Join(d.Dir, "drainit_"+d.Meta.Version+"_"+p.name)
			var runner []string
			if p.qemu != "" {
				q, err := testenv.LookPath(p.qemu)
				if err != nil {
					testenv.SkipUnlessCI(t, fmt.Sprintf("%v: cannot run the %s binary (Debian: apt-get install qemu-user-static)", err, p.goarch))
				}
				runner = []string{q}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, b := range []struct{ name, path, arg string }{
				{"drainit", bin, "version"},
				{"drainit-check", filepath.Join(d.Dir, "drainit-check_"+d.Meta.Version+"_"+p.name), "--version"},
			} {
				staticFor(t, b.path, p.machine)
				argv := append(append(runner[:len(runner):len(runner)], b.path), b.arg)
				out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %v\n%s", argv, err, out)
				}
				want := fmt.Sprintf("%s v%s (commit %s, ", b.name, d.Meta.Version, d.Meta.Commit)
				if !strings.HasPrefix(string(out), want) || !strings.Contains(string(out), "linux/"+p.goarch) {
					t.Errorf("%s %s says %q, want %q… linux/%s", filepath.Base(b.path), b.arg, out, want, p.goarch)
				}
			}
			// Linked with drainit's own entry point (internal/startsig): a signal ignored when it
			// starts stays ignored for the app. The app is this machine's grep, which drainit
			// execs natively even under qemu-user.
			script := `trap "" PIPE USR1; exec "$@"`
			ign := exec.CommandContext(ctx, "sh", append([]string{"-c", script, "sh"}, append(append(runner, bin),
				"--log-format", "json", "--", "grep", "SigIgn", "/proc/self/status")...)...)
			out, err := ign.Output()
			if err != nil {
				t.Fatalf("%v: %v\n%s", ign.Args, err, out)
			}
			var mask uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "SigIgn: %x", &mask); err != nil {
				t.Fatalf("the app printed %q: %v", out, err)
			}
			for _, sig := range []uint{10, 13} { // USR1, PIPE
				if mask&(1<<(sig-1)) == 0 {
					t.Errorf("started with signal %d ignored, drainit gave the app SigIgn %016x: not linked with its entry point?", sig, mask)
				}
			}
		})
	}
}

// staticFor checks that bin is an ELF executable for machine, static and stripped.
func staticFor(t *testing.T, bin string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s: ELF machine %v, want %v", filepath.Base(bin), f.Machine, machine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: not a static binary", filepath.Base(bin), prog.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", filepath.Base(bin), libs)
	}
	if f.Section(".symtab") != nil {
		t.Errorf("%s has a symbol table: not stripped", filepath.Base(bin))
	}
}

// TestDebInstalls: dpkg -i puts /usr/bin/drainit and drainit-check on the machine, the installed
// binary is this release and its check runs, and dpkg -r takes them away again.
func TestDebInstalls(t *testing.T) {
	d := need(t)
	if os.Geteuid() != 0 {
		testenv.SkipUnlessCI(t, "needs root: dpkg -i installs into /usr/bin")
	}
	dpkg, err := testenv.LookPath("dpkg")
	if err != nil {
		testenv.SkipUnlessCI(t, err.Error()+" (not a Debian machine)")
	}
	if out, err := exec.Command(dpkg, "-s", "drainit").CombinedOutput(); err == nil {
		testenv.SkipUnlessCI(t, "a drainit package is installed already; not replacing it:\n"+string(out))
	}
	deb := filepath.Join(d.Dir, "drainit_"+strings.Replace(d.Meta.Version, "-", "~", 1)+"_amd64.deb")
	if out, err := exec.Command(dpkg, "-i", deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg -i %s: %v\n%s", deb, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(dpkg, "-r", "drainit").CombinedOutput(); err != nil {
			t.Errorf("dpkg -r drainit: %v\n%s", err, out)
		}
		for _, f := range []string{"/usr/bin/drainit", "/usr/bin/drainit-check"} {
			if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after dpkg -r, %s: %v, want it gone", f, err)
			}
		}
	})
	out, err := exec.Command("/usr/bin/drainit", "version").CombinedOutput()
	if err != nil {
		t.Fatalf("/usr/bin/drainit version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "drainit v"+d.Meta.Version+" ") {
		t.Errorf("the installed drainit says %q, want version %s", out, d.Meta.Version)
	}
	// drainit check finds the package's drainit-check beside /usr/bin/drainit.
	checkRunsBeside(t, "/usr/bin/drainit", "the installed")
	files, err := exec.Command("dpkg", "-L", "drainit").Output()
	if err != nil {
		t.Fatalf("dpkg -L drainit: %v", err)
	}
	if !strings.Contains(string(files), "/usr/bin/drainit-check") {
		t.Errorf("the package holds no /usr/bin/drainit-check:\n%s", files)
	}
	if !strings.Contains(string(files), "/usr/share/doc/drainit/copyright") {
		t.Errorf("the package holds no copyright file (the license):\n%s", files)
	}
}

// TestApkHoldsTheBinary: each .apk (a concatenation of gzipped tar segments: control, then data)
// holds usr/bin/drainit and usr/bin/drainit-check, executable, the same bytes as the release's
// binaries.
func TestApkHoldsTheBinary(t *testing.T) {
	d := need(t)
	for _, p := range platforms {
		if p.goos != "linux" {
			continue
		}
		apk := filepath.Join(d.Dir, "drainit_"+strings.Replace(d.Meta.Version, "-", "_", 1)+"_"+p.apk+".apk")
		for _, cmd := range []string{"drainit", "drainit-check"} {
			got, mode, err := fileInApk(apk, "usr/bin/"+cmd)
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(apk), err)
				continue
			}
			want, err := os.ReadFile(filepath.Join(d.Dir, cmd+"_"+d.Meta.Version+"_"+p.name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: usr/bin/%s is not the release's %s binary", filepath.Base(apk), cmd, p.name)
			}
			if mode&0o111 == 0 {
				t.Errorf("%s: usr/bin/%s has mode %o, not executable", filepath.Base(apk), cmd, mode)
			}
		}
	}
}

// fileInApk reads one file out of an apk, segment by segment: each gzip member is a tar stream
// of its own, which a single tar reader would stop at.
func fileInApk(path, name string) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, 0, err
	}
	for {
		zr.Multistream(false)
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, 0, err
			}
			if h.Name == name {
				b, err := io.ReadAll(tr)
				return b, h.Mode, err
			}
		}
		if _, err := io.Copy(io.Discard, zr); err != nil {
			return nil, 0, err
		}
		if err := zr.Reset(br); err == io.EOF {
			return nil, 0, fmt.Errorf("no %s in any segment", name)
		} else if err != nil {
			return nil, 0, err
		}
	}
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
