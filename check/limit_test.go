package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// endless is input without end: a first line, then one line that never ends.
type endless struct{ first []byte }

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.first)
	e.first = e.first[n:]
	for i := n; i < len(p); i++ {
		p[i] = 'x'
	}
	return len(p), nil
}

// sized is n bytes of valid YAML: one long comment line.
func sized(n int) []byte {
	b := bytes.Repeat([]byte("x"), n)
	copy(b, "# ")
	b[n-1] = '\n'
	return b
}

// TestReadCap: one input is read up to 64 MiB: a byte more, from a file or a pipe, is an error
// naming the input, whatever the text holds; exactly 64 MiB is read.
func TestReadCap(t *testing.T) {
	data := sized(maxInput + 1)
	for _, in := range []io.Reader{bytes.NewReader(data), struct{ io.Reader }{bytes.NewReader(data)}} {
		if _, err := Read("big.yaml", in); fmt.Sprint(err) != "big.yaml: larger than 64 MiB: not read" {
			t.Errorf("%T: %v", in, err)
		}
	}
	if _, err := Read("big.yaml", bytes.NewReader(data[:maxInput])); err != nil {
		t.Errorf("exactly 64 MiB: %v", err)
	}
}

// TestReadCapStartOver: input the streaming reader hands to the whole-document reader (here for
// its anchor) is capped there too, and named as too large, not as YAML the parser choked on.
func TestReadCapStartOver(t *testing.T) {
	data := append([]byte("a: &x 1\nb: *x\n"), sized(maxInput)...)
	for _, in := range []io.Reader{bytes.NewReader(data), struct{ io.Reader }{bytes.NewReader(data)}} {
		if _, err := Read("big.yaml", in); fmt.Sprint(err) != "big.yaml: larger than 64 MiB: not read" {
			t.Errorf("%T: %v", in, err)
		}
	}
}

// TestReadHead: the head kept of an input is its first bytes, from a file or a pipe, also when
// the reader starts over (an anchor) and reads the file again.
func TestReadHead(t *testing.T) {
	text := "kind: Pod\nmetadata: &m {name: p}\nspec: {containers: [{name: c}]}\nother: *m\n"
	for _, size := range []int{0, 8, len(text), 4096} {
		for _, in := range []io.Reader{strings.NewReader(text), struct{ io.Reader }{strings.NewReader(text)}} {
			r := &reader{file: "p.yaml"}
			head, err := readHead(r, in, size)
			if err != nil || len(r.out) != 1 {
				t.Fatalf("%T: %v, %d workloads", in, err, len(r.out))
			}
			if want := text[:min(size, len(text))]; string(head) != want {
				t.Errorf("%T, head of %d: %q, want %q", in, size, head, want)
			}
		}
	}
}

// TestInputsCap: a named file or standard input over 64 MiB stops the check, naming it, before
// a file's bytes are read (a sparse file of 2 GiB is refused at once); a found one is a
// problem, and the other files are still read.
func TestInputsCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 2<<30); err != nil {
		testenv.SkipUnlessCI(t, "no sparse files here: "+err.Error())
	}
	pod := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(pod, []byte("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadInputs([]string{big}, nil, ReadOptions{}); fmt.Sprint(err) != big+": larger than 64 MiB: not read" {
		t.Errorf("named: %v", err)
	}
	in := readTree(t, []string{dir}, ReadOptions{})
	if want := []Problem{{File: big, Message: "larger than 64 MiB: not read"}}; !reflect.DeepEqual(in.Problems, want) {
		t.Errorf("found: problems %+v, want %+v", in.Problems, want)
	}
	if in.Workloads != 1 {
		t.Errorf("found: %d workloads, want the pod's", in.Workloads)
	}
	_, err := ReadInputs([]string{"-"}, io.LimitReader(&endless{first: []byte("a: b\n")}, maxInput+1), ReadOptions{})
	if fmt.Sprint(err) != "<stdin>: larger than 64 MiB: not read" {
		t.Errorf("stdin: %v", err)
	}
}

// endlessEnv makes the re-executed test binary read endless standard input.
const endlessEnv = "DRAINIT_CHECK_MEM_ENDLESS"

// TestEndlessStdinMemory: one line without end on standard input is refused once it passes
// 64 MiB, the process's peak staying a few times that (the peak is the resident high-water
// mark of a child process that only reads).
func TestEndlessStdinMemory(t *testing.T) {
	if os.Getenv(endlessEnv) != "" {
		endlessChild()
		return
	}
	testenv.SkipShort(t, "reads 64 MiB in a child process")
	if _, err := os.Stat("/proc/self/status"); err != nil {
		testenv.SkipUnlessCI(t, "the peak is read from /proc/self/status (VmHWM): "+err.Error())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEndlessStdinMemory$")
	cmd.Env = append(os.Environ(), endlessEnv+"=1", "GOGC=100", "GOMEMLIMIT=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var msg string
	var hwm int
	if _, err := fmt.Sscanf(lastLine(string(out), "endless "), "endless %q peak %d", &msg, &hwm); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	if msg != "<stdin>: larger than 64 MiB: not read" {
		t.Errorf("error %q", msg)
	}
	const bound = 6 * maxInput
	t.Logf("peak RSS %d MiB (bound %d MiB)", hwm>>20, bound>>20)
	if hwm > bound {
		t.Errorf("peak RSS %d MiB reading an endless line; want under %d MiB", hwm>>20, bound>>20)
	}
}

func endlessChild() {
	_, err := ReadInputs([]string{"-"}, &endless{first: []byte("a: b\n")}, ReadOptions{})
	var re *ReadError
	if !errors.As(err, &re) {
		fmt.Printf("endless read: %v\n", err)
		os.Exit(1)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	var kb int
	fmt.Sscanf(strings.Fields(lastLine(string(status), "VmHWM:") + " 0 0")[1], "%d", &kb)
	fmt.Printf("endless %q peak %d\n", re.Error(), kb<<10)
}
