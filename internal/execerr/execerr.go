// Package execerr says why an execve failed, in words that point at the right file, for the app
// and for exec hooks alike.
//
// execve's errors name no file, and two of them send a user looking in the wrong place. ENOENT
// for a file that is there is about another file: the interpreter its #! line names, or the
// dynamic loader a program not linked statically names (the usual case in an image FROM
// scratch). ENOEXEC is a program built for another architecture, or a script without a #! line
// (which a shell would run with itself, and execve does not). Explain reads the head of the file
// to tell which; it runs only after an exec has failed, so nothing of it is on the start path.
package execerr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// processLimit is what EAGAIN from fork means: no process may be created. The pids controller's
// limit counts threads as well as processes, so drainit's own threads count against it too.
const processLimit = "no process can be created: the container's process limit is reached (its cgroup's pids.max: " +
	"`--pids-limit`, the pod's pids limit; or RLIMIT_NPROC), threads included"

// head is how much of a file Explain reads: a #! line longer than this is refused by the kernel
// anyway (BINPRM_BUF_SIZE is 256), and ELF program headers sit near the start of the file.
const head = 4096

// Explain returns the status a shell would exit with when the exec of path failed with err (127
// for something not found, 126 for something found that cannot be executed, and for a process
// that could not be created at all) and the reason, naming path. The reason wraps err.
func Explain(path string, err error) (int, error) {
	var st unix.Stat_t
	exists := unix.Stat(path, &st) == nil
	switch {
	case errors.Is(err, unix.ENOENT) && exists:
		return 127, fmt.Errorf("%s: %w: %s", path, err, missingInterpreter(path))
	case errors.Is(err, unix.ENOENT):
		return 127, fmt.Errorf("%s: %w", path, err)
	case errors.Is(err, unix.EACCES) && exists && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return 126, fmt.Errorf("%s: %w: it is a directory", path, err)
	case errors.Is(err, unix.EACCES) && exists && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return 126, fmt.Errorf("%s: %w: not a regular file", path, err)
	case errors.Is(err, unix.EACCES) && exists && st.Mode&0o111 == 0:
		return 126, fmt.Errorf("%s: %w: not executable (mode %04o)", path, err, st.Mode&0o7777)
	case errors.Is(err, unix.EACCES) && exists && noexec(path):
		return 126, fmt.Errorf("%s: %w: its file system is mounted noexec", path, err)
	case errors.Is(err, unix.ENOEXEC) && exists:
		return 126, fmt.Errorf("%s: %w: %s", path, err, badFormat(path))
	case errors.Is(err, unix.EAGAIN):
		// From fork, before any exec: nothing is wrong with the file.
		return 126, fmt.Errorf("%s: %w: %s", path, err, processLimit)
	case errors.Is(err, unix.ENOMEM):
		return 126, fmt.Errorf("%s: %w: not enough memory to start a process (the container's memory limit?)", path, err)
	}
	return 126, fmt.Errorf("%s: %w", path, err)
}

// missingInterpreter says which file an ENOENT for the existing file path was about.
func missingInterpreter(path string) string {
	b := readHead(path)
	if interp, ok := shebang(b); ok {
		if _, err := os.Stat(interp); err == nil {
			// The interpreter is there: it is what cannot find its own interpreter or loader.
			return fmt.Sprintf("the interpreter its #! line names, %s, cannot be run (its own interpreter or loader is missing)", interp)
		}
		return fmt.Sprintf("the interpreter its #! line names, %s, does not exist", interp)
	}
	if f, ok := parseELF(b); ok && f.interp != "" {
		return fmt.Sprintf("the dynamic loader it names, %s, does not exist (a program not linked statically, in an image without its libraries?)", f.interp)
	}
	return "the interpreter or dynamic loader it names does not exist"
}

// badFormat says why the existing file path is not something execve runs.
func badFormat(path string) string {
	b := readHead(path)
	if f, ok := parseELF(b); ok {
		if host := hostMachine(); f.machine != host {
			return fmt.Sprintf("a program for %s, not for this machine (%s)", machineName(f.machine), machineName(host))
		}
		return "an ELF file this kernel cannot run"
	}
	if _, ok := shebang(b); ok {
		return "its #! line cannot be used (too long, or its interpreter is itself a script?)"
	}
	if bytes.HasPrefix(b, []byte("#!")) {
		return "its #! line names no interpreter"
	}
	return "not a program, and no #! line says what runs it"
}

// readHead returns the first bytes of path, or nothing when it cannot be read.
func readHead(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, head)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// shebang returns the interpreter a #! line names, as the kernel reads it: after "#!" and blanks,
// up to the next blank or the end of the line.
func shebang(b []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("#!"))
	if !ok {
		return "", false
	}
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	rest = bytes.TrimLeft(rest, " \t")
	if i := bytes.IndexAny(rest, " \t"); i >= 0 {
		rest = rest[:i]
	}
	if len(rest) == 0 {
		return "", false
	}
	return string(rest), true
}

// elfFile is what Explain needs of an ELF header: the machine it is for and its loader.
type elfFile struct {
	machine uint16
	interp  string
}

// parseELF reads the machine and the PT_INTERP path of an ELF file from its first bytes. A loader
// named outside those bytes is left blank.
func parseELF(b []byte) (elfFile, bool) {
	if len(b) < 0x34 || !bytes.HasPrefix(b, []byte("\x7fELF")) {
		return elfFile{}, false
	}
	var bo binary.ByteOrder
	switch b[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return elfFile{}, false
	}
	f := elfFile{machine: bo.Uint16(b[0x12:])}
	var phoff, phentsize, phnum uint64
	is64 := b[4] == 2
	switch {
	case is64 && len(b) >= 0x40:
		phoff = bo.Uint64(b[0x20:])
		phentsize, phnum = uint64(bo.Uint16(b[0x36:])), uint64(bo.Uint16(b[0x38:]))
	case b[4] == 1:
		phoff = uint64(bo.Uint32(b[0x1c:]))
		phentsize, phnum = uint64(bo.Uint16(b[0x2a:])), uint64(bo.Uint16(b[0x2c:]))
	default:
		return f, true
	}
	size := uint64(len(b))
	for i := range phnum {
		at := phoff + i*phentsize
		if phoff > size || phentsize < 0x20 || at+phentsize > size {
			break
		}
		ph := b[at : at+phentsize]
		if bo.Uint32(ph) != 3 { // PT_INTERP
			continue
		}
		var off, n uint64
		if is64 {
			if len(ph) < 0x28 {
				break
			}
			off, n = bo.Uint64(ph[0x08:]), bo.Uint64(ph[0x20:])
		} else {
			off, n = uint64(bo.Uint32(ph[0x04:])), uint64(bo.Uint32(ph[0x10:]))
		}
		if off <= size && n <= size-off {
			f.interp = string(bytes.TrimRight(b[off:off+n], "\x00"))
		}
		break
	}
	return f, true
}

// machines are the ELF e_machine values of the machines Go and Debian build for, as uname -m
// names them, with the GOARCH values whose programs are for each.
var machines = []struct {
	elf    uint16
	name   string
	goarch []string
}{
	{3, "i386", []string{"386"}},
	{62, "x86_64", []string{"amd64"}},
	{40, "arm", []string{"arm"}},
	{183, "aarch64", []string{"arm64"}},
	{21, "ppc64", []string{"ppc64", "ppc64le"}},
	{22, "s390x", []string{"s390x"}},
	{243, "riscv64", []string{"riscv64"}},
	{258, "loongarch64", []string{"loong64"}},
	{8, "mips", []string{"mips", "mipsle", "mips64", "mips64le"}},
}

// machineName is an ELF e_machine as uname -m says it.
func machineName(m uint16) string {
	for _, mc := range machines {
		if mc.elf == m {
			return mc.name
		}
	}
	return fmt.Sprintf("ELF machine %d", m)
}

// hostMachine is the ELF e_machine of the programs this machine runs: drainit's own.
func hostMachine() uint16 {
	for _, mc := range machines {
		if slices.Contains(mc.goarch, runtime.GOARCH) {
			return mc.elf
		}
	}
	return 8 // a GOARCH drainit is not built for: as for mips
}

// noexec reports whether path is on a file system mounted noexec.
func noexec(path string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(path, &fs) == nil && fs.Flags&unix.ST_NOEXEC != 0
}
