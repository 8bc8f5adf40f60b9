package check

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// writeList writes a `kind: List` of Deployments laid out as `kubectl get deploy -A -o yaml`
// prints them (items first, kind last), at least size bytes of it; it returns how many. The
// text is the same on every run.
func writeList(w io.Writer, size int) (int, error) {
	bw := bufio.NewWriter(w)
	n, written := 0, 0
	put := func(format string, args ...any) {
		k, _ := fmt.Fprintf(bw, format, args...)
		written += k
	}
	put("apiVersion: v1\nitems:\n")
	for written < size {
		put(`- apiVersion: apps/v1
  kind: Deployment
  metadata:
    annotations:
      deployment.kubernetes.io/revision: "3"
      kubectl.kubernetes.io/last-applied-configuration: |
        {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web-%[1]d","namespace":"ns-%[2]d"}}
    creationTimestamp: "2026-01-02T03:04:05Z"
    generation: 3
    labels:
      app: web-%[1]d
    name: web-%[1]d
    namespace: ns-%[2]d
    resourceVersion: "%[3]d"
    uid: 6b1f7c1e-0000-4000-8000-%012[1]d
  spec:
    progressDeadlineSeconds: 600
    replicas: 3
    revisionHistoryLimit: 10
    selector:
      matchLabels:
        app: web-%[1]d
    strategy:
      rollingUpdate:
        maxSurge: 25%%
        maxUnavailable: 25%%
      type: RollingUpdate
    template:
      metadata:
        labels:
          app: web-%[1]d
      spec:
        containers:
        - env:
          - name: LOG_LEVEL
            value: info
          - name: DB_PASSWORD
            valueFrom:
              secretKeyRef:
                key: password
                name: db
          image: registry.example/web:1.%[1]d
          imagePullPolicy: IfNotPresent
          lifecycle:
            preStop:
              sleep:
                seconds: 5
          name: web
          ports:
          - containerPort: 8080
            name: http
            protocol: TCP
          resources: {}
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: File
        dnsPolicy: ClusterFirst
        restartPolicy: Always
        schedulerName: default-scheduler
        securityContext: {}
        terminationGracePeriodSeconds: %[4]d
  status:
    availableReplicas: 3
    conditions:
    - lastTransitionTime: "2026-01-02T03:04:05Z"
      lastUpdateTime: "2026-01-02T03:04:05Z"
      message: ReplicaSet "web-%[1]d-5d9c7b8f6" has successfully progressed.
      reason: NewReplicaSetAvailable
      status: "True"
      type: Progressing
    observedGeneration: 3
    readyReplicas: 3
    replicas: 3
    updatedReplicas: 3
`, n, n%50, 1000+n, 30+n%60)
		n++
	}
	put("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	return n, bw.Flush()
}

// TestReadListStreams: a List read from a file or a pipe gives the same Workloads, with their
// lines, as reading it whole; and the List is really streamed (not handed to readWhole).
func TestReadListStreams(t *testing.T) {
	var buf bytes.Buffer
	n, err := writeList(&buf, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	want, err := readWhole("l.yaml", bytes.NewReader(buf.Bytes()))
	if err != nil || len(want) != n {
		t.Fatalf("readWhole: %d workloads, %v; want %d", len(want), err, n)
	}
	s := &streamer{r: &reader{file: "l.yaml"}, src: &source{br: bufio.NewReader(bytes.NewReader(buf.Bytes()))}}
	if err := s.run(); err != nil {
		t.Fatalf("a kubectl List is not streamed: %v", err)
	}
	for _, in := range []io.Reader{bytes.NewReader(buf.Bytes()), struct{ io.Reader }{bytes.NewReader(buf.Bytes())}} {
		got, err := Read("l.yaml", in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Read from %T differs from readWhole (err %v)", in, err)
		}
	}
	if w := want[n-1]; w.Name != fmt.Sprintf("web-%d", n-1) || w.Line < 2 || w.GraceLine <= w.Line {
		t.Errorf("last workload %q at line %d, grace at %d", w.Name, w.Line, w.GraceLine)
	}
}

// Cutting along lines must not cut where YAML does not: these read as readWhole reads them.
func TestReadCutsOnlyWhereSound(t *testing.T) {
	pod := "  kind: Pod\n  metadata: {name: p}\n  spec:\n    containers:\n    - name: c\n"
	for _, in := range []string{
		"items:\n- a: 1\n" + "kind: List\n",
		"items:\n-" + pod[1:] + "- " + pod[2:] + "kind: List\n",
		"kind: PodList\nitems:\n  -" + strings.ReplaceAll(pod, "\n  ", "\n    ")[1:] + "metadata: {}\n",
		"items:\n- " + pod[2:] + "kind: Pod\n",                             // not a List: its items are nothing
		"items:\n- " + pod[2:] + "items: []\nkind: List\n",                 // items twice
		"a: \"x\nitems:\n- " + pod[2:] + "\"\nkind: List\n",                // items: inside a quoted string
		"{a: 1,\nitems:\n- " + pod[2:] + "}\n",                             // inside a flow mapping
		"items:\n- &p " + pod[2:] + "- *p\nkind: List\n",                   // an alias across items
		"items:\n- " + pod[2:] + " x: 1\nkind: List\n",                     // a line between indents
		"items:\n- " + pod[2:] + "---\nkind: List\n",                       // a document ends the items
		"items:\n- " + pod[2:] + "- [1,\n2]\nkind: List\n",                 // a flow sequence cut
		"items:\n- " + pod[2:] + "-\n- 3\nkind: List\n",                    // a null and a number
		"items: # the pods\n\n# one\n- " + pod[2:] + "# end\nkind: List\n", // comments
		"items:\r\n- " + strings.ReplaceAll(pod[2:], "\n", "\r\n") + "kind: List\r\n",
		"---\n# c\n---\nitems:\n- " + pod[2:] + "kind: List\n---\n- x\n",
	} {
		want, wantErr := readWhole("c.yaml", strings.NewReader(in))
		got, err := Read("c.yaml", strings.NewReader(in))
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\nRead      %v %+v\nreadWhole %v %+v", in, err, got, wantErr, want)
		}
	}
}

// memChildEnv names the List file the re-executed test binary reads; memPipeEnv makes it read
// through a reader that cannot seek, as stdin from a pipe.
const (
	memChildEnv = "DRAINIT_CHECK_MEM_FILE"
	memPipeEnv  = "DRAINIT_CHECK_MEM_PIPE"
)

// TestReadListMemory: `drainit check` on a 20 MiB List of Deployments (kubectl get -A -o yaml
// of a big cluster) peaks at under 6 times the input (issue 42), from a file or a pipe. The
// peak is the resident high-water mark of a child process that only reads and checks the List
// as ReadInputs does.
func TestReadListMemory(t *testing.T) {
	if path := os.Getenv(memChildEnv); path != "" {
		memChild(path, os.Getenv(memPipeEnv) != "")
		return
	}
	testenv.SkipShort(t, "writes and reads a 20 MiB manifest in a child process")
	if _, err := os.Stat("/proc/self/status"); err != nil {
		testenv.SkipUnlessCI(t, "the peak is read from /proc/self/status (VmHWM): "+err.Error())
	}
	const size = 20 << 20
	path := t.TempDir() + "/cluster.yaml"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := writeList(f, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	const bound = 6 * size
	for _, pipe := range []bool{false, true} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReadListMemory$")
		cmd.Env = append(os.Environ(), memChildEnv+"="+path, "GOGC=100", "GOMEMLIMIT=off")
		if pipe {
			cmd.Env = append(cmd.Env, memPipeEnv+"=1")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		var got, hwm int
		if _, err := fmt.Sscanf(lastLine(string(out), "workloads "), "workloads %d peak %d", &got, &hwm); err != nil {
			t.Fatalf("child said %q: %v", out, err)
		}
		if got != n {
			t.Errorf("pipe %v: read %d workloads, want %d", pipe, got, n)
		}
		t.Logf("pipe %v: %d MiB input, peak RSS %d MiB (bound %d MiB)", pipe, size>>20, hwm>>20, bound>>20)
		if hwm > bound {
			t.Errorf("pipe %v: peak RSS %d MiB for a %d MiB List; want under %d MiB", pipe, hwm>>20, size>>20, bound>>20)
		}
	}
}

func memChild(path string, pipe bool) {
	f, err := os.Open(path)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	args := []string{path}
	if pipe {
		args = []string{"-"}
	}
	in, err := ReadInputs(args, struct{ io.Reader }{f}, ReadOptions{})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	kb, _ := strconv.Atoi(strings.Fields(lastLine(string(status), "VmHWM:") + " 0 0")[1])
	fmt.Printf("workloads %d peak %d findings %d\n", in.Workloads, kb<<10, len(in.Results))
}

// lastLine returns the last line of s that starts with prefix.
func lastLine(s, prefix string) string {
	found := ""
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			found = l
		}
	}
	return found
}

// BenchmarkReadList reads a 4 MiB kubectl List of Deployments; B/op is what it allocates.
func BenchmarkReadList(b *testing.B) {
	var buf bytes.Buffer
	if _, err := writeList(&buf, 4<<20); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read("l.yaml", bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// heapProbe hands out an input and notes the live heap (after a collection) once a quarter of
// it has been read and again once all of it has.
type heapProbe struct {
	*bytes.Reader
	size          int
	quarter, full uint64
}

func (p *heapProbe) Read(b []byte) (int, error) {
	n, err := p.Reader.Read(b)
	left := p.Reader.Len()
	if p.quarter == 0 && left <= p.size*3/4 {
		p.quarter = liveHeap()
	}
	if left == 0 && p.full == 0 {
		p.full = liveHeap()
	}
	return n, err
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCheckHoldsNoWorkload: checking as it reads (what ReadInputs does), the reader keeps no
// Workload once checked, so that the live heap does not grow with the input: between a quarter
// and all of a 4 MiB List of Deployments with no findings (some 14,000), or of the same as a
// stream of documents, it grows by less than 1 MiB. Keeping the Workloads, as Read does, it
// grew by 8-10 MiB. (Issue 42: a 20 MiB List took 170-181 MiB.)
func TestCheckHoldsNoWorkload(t *testing.T) {
	const item = `- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: w%d
  spec:
    template:
      spec:
        terminationGracePeriodSeconds: 30
        containers:
        - name: web
          image: w:%d
          lifecycle:
            preStop:
              sleep:
                seconds: 5
`
	for _, list := range []bool{true, false} {
		var buf bytes.Buffer
		if list {
			buf.WriteString("apiVersion: v1\nitems:\n")
		}
		n := 0
		for ; buf.Len() < 4<<20; n++ {
			if list {
				fmt.Fprintf(&buf, item, n, n)
			} else {
				buf.WriteString("---\n" + strings.ReplaceAll(fmt.Sprintf(item, n, n)[2:], "\n  ", "\n"))
			}
		}
		if list {
			buf.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
		}
		p := &heapProbe{Reader: bytes.NewReader(buf.Bytes()), size: buf.Len()}
		r := &reader{file: "l.yaml", check: &checking{}}
		if _, err := readHead(r, p, 0); err != nil {
			t.Fatal(err)
		}
		if r.nWorkloads != n || len(r.done) != 0 {
			t.Fatalf("list %v: %d workloads checked, %d kept; want %d, none", list, r.nWorkloads, len(r.done), n)
		}
		grew := int64(p.full) - int64(p.quarter)
		t.Logf("list %v: %d Deployments, live heap %d KiB at a quarter, %d KiB at the end", list, n, p.quarter>>10, p.full>>10)
		if grew > 1<<20 {
			t.Errorf("list %v: the live heap grew by %d KiB over three quarters of the input; want under 1 MiB", list, grew>>10)
		}
	}
}
