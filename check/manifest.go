package check

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultGrace is the pod's terminationGracePeriodSeconds when the manifest does not set it.
const DefaultGrace = 30 * time.Second

// Workload is one pod template found in a manifest: a Pod's spec, or the template of a
// controller that makes pods.
type Workload struct {
	File string // the name the file was read under
	Kind string // Pod, Deployment, …
	Name string // metadata.name; may be empty
	Line int    // where the object starts

	Grace     time.Duration // terminationGracePeriodSeconds, DefaultGrace when unset
	GraceSet  bool
	GraceLine int // 0 when unset

	// HostNetwork is spec.hostNetwork: the pod shares the node's network, so an httpGet hook
	// to localhost reaches the pod's containers.
	HostNetwork bool
	// SharePID is spec.shareProcessNamespace: the containers share one PID namespace, whose
	// PID 1 is the pod's sandbox (pause), not a container's first process.
	SharePID bool

	// Containers are the pod's containers, then its native sidecars (Container.Sidecar) in the
	// order of initContainers.
	Containers []Container

	// Ignores are the drainit.io/ignore annotations of the object and of its pod template.
	Ignores []Annotation

	// Document and Source locate a workload read from standard input, where a line number
	// points nowhere a reader can open: the document's number in the stream, and the path of
	// Helm's "# Source:" comment above it. Read leaves them zero; ReadInputs sets them.
	Document int
	Source   string

	// What the app rules read beyond the containers (appread.go).
	namespace string
	podMeta   podMeta
	volumes   []volume
	seq       int // its place in the input, when ReadInputs checks as it reads
}

// Container is what the rules need of one container: how it starts, its environment, its
// preStop hook and its stop signal.
type Container struct {
	Name      string
	Line      int
	Image     string
	ImageLine int // 0 when unset

	Command      []string // nil when unset: the image's ENTRYPOINT runs
	CommandLines []int    // the line of each Command element
	Args         []string
	ArgsLines    []int

	Env     []EnvVar
	EnvFrom bool // envFrom is set: variables not listed in Env may still be set
	Ports   []Port

	PreStop *Handler // nil when there is none

	// Probes are the readinessProbe, livenessProbe and startupProbe that are set, in that order.
	Probes []Probe

	// StopSignal is lifecycle.stopSignal as written (Kubernetes 1.33+): the signal the runtime
	// stops the container with instead of the image's STOPSIGNAL. StopSignalLine is 0 when it is
	// unset; a value set to "" still has its line, since the API server rejects it.
	StopSignal     string
	StopSignalLine int

	// Sidecar says it is an init container with restartPolicy Always, a native sidecar: it runs
	// beside the containers, and the kubelet stops it after them (kubernetes.md). Init
	// containers without it have exited before the pod runs, and are not read.
	Sidecar bool

	mounts []mount       // volumeMounts (appread.go)
	files  []mountedConf // ConfigMap entries of the same input mounted into it
}

// EnvVar is one entry of a container's env.
type EnvVar struct {
	Name  string
	Value string
	Known bool // false when the value comes from valueFrom (a Secret, a ConfigMap, a field)
	Line  int
}

// Port is a declared container port, for resolving named ports in httpGet hooks and for what
// the container serves.
type Port struct {
	Name     string
	Number   int
	Protocol string // as written: "" is TCP
	Line     int
}

// Handler is a lifecycle hook. Exactly one of its forms is set in a valid manifest; the reader
// keeps whichever it finds.
type Handler struct {
	Line int

	Exec    []string // exec.command; nil when not an exec hook
	IsExec  bool
	HTTP    *HTTPGet // nil when not an httpGet hook
	Sleep   int64    // sleep.seconds
	IsSleep bool
	IsTCP   bool // tcpSocket, deprecated and a no-op for preStop
}

// HTTPGet is an httpGet hook.
type HTTPGet struct {
	Path     string
	Port     int    // 0 when given by name
	PortName string // the port's name when given by name
	Host     string
	Scheme   string
	Headers  []Header
}

// Probe is one of a container's probes, read as a Handler: its httpGet is what the rules look at.
type Probe struct {
	Kind string // readinessProbe, livenessProbe or startupProbe
	*Handler
	// Grace is the probe's own terminationGracePeriodSeconds (liveness and startup probes,
	// Kubernetes 1.25+ by default): the grace period of the restart its failure causes. Zero
	// when unset; GraceLine is where it is set.
	Grace     time.Duration
	GraceLine int
}

// Header is one of an httpGet hook's httpHeaders.
type Header struct {
	Name, Value string
}

// ReadError is input that cannot be read as Kubernetes manifests: which file, where, what.
type ReadError struct {
	File string
	Line int // 0 when unknown
	Msg  string
}

func (e *ReadError) Error() string {
	return Problem{File: e.File, Line: e.Line, Message: e.Msg}.String()
}

// maxListDepth bounds nested List objects; kubectl never nests them, a fuzzer might.
const maxListDepth = 8

// maxMergeDepth bounds chains of YAML merge keys ("<<"), which an alias can make circular.
const maxMergeDepth = 16

// readWhole is Read done the simple way: each document decoded into one node tree. It defines
// what Read returns; Read falls back to it for input its streaming does not take apart (see
// stream.go), and the fuzz target checks that the two agree.
func readWhole(file string, in io.Reader) ([]Workload, error) {
	r := &reader{file: file}
	if err := r.whole(in); err != nil {
		return nil, err
	}
	return r.out, nil
}

// whole is readWhole into r.
func (r *reader) whole(in io.Reader) error {
	file := r.file
	dec := yaml.NewDecoder(in)
	for doc := 1; ; doc++ {
		var n yaml.Node
		if err := decode(dec, &n); err != nil {
			if errors.Is(err, io.EOF) {
				r.finish()
				return nil
			}
			return r.yamlError(err)
		}
		if len(n.Content) == 0 {
			continue
		}
		root := resolve(n.Content[0])
		if root == nil || isNull(root) {
			continue
		}
		if root.Kind != yaml.MappingNode {
			return &ReadError{File: file, Line: root.Line, Msg: fmt.Sprintf(
				"document %d is %s, not a Kubernetes object", doc, describe(root))}
		}
		if err := r.aliasing(root, ""); err != nil {
			return err
		}
		if err := r.object(root, "", 0); err != nil {
			return err
		}
	}
}

// decode runs the YAML parser, turning a panic in it into an error: the input is the user's,
// and a crash would say less than "this file cannot be parsed".
func decode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("yaml: parser failed: %v", p)
		}
	}()
	return dec.Decode(n)
}

type reader struct {
	file   string
	visits int // mappings searched by lookup, to keep merge-key walks linear (see the tests)

	// check, when set, checks each workload once it is read and keeps only what the reports
	// need (ReadInputs), so that memory does not grow with the input; nil keeps the Workloads.
	check *checking
	nread int // workloads read, for putting the checked back in reading order

	found

	// streamed, when set, stands for the items of the top-level object being read: its items:
	// sequence was cut out of the document and read item by item.
	streamed *streamedItems
}

// found is what the reader has found so far. A streamed List's items have one of their own
// until the document turns out to be a List.
type found struct {
	out         []Workload  // without check, every workload; with it, those waiting for link
	done        []checked   // with check: the workloads checked that have results or a Template
	nWorkloads  int         // with check: the workloads checked
	nContainers int         // with check: their containers
	cms         []configMap // the ConfigMaps read so far, for link (appread.go)
}

func (f *found) add(g found) {
	f.out = append(f.out, g.out...)
	f.done = append(f.done, g.done...)
	f.nWorkloads += g.nWorkloads
	f.nContainers += g.nContainers
	f.cms = append(f.cms, g.cms...)
}

// add takes a workload read. Without check it is kept. With check it is checked at once,
// unless it mounts a ConfigMap, which a later document may be: then it waits for link.
func (r *reader) add(w Workload) {
	if r.check == nil {
		r.out = append(r.out, w)
		return
	}
	r.nread++
	w.seq = r.nread
	if w.mountsConfigMap() {
		r.out = append(r.out, w)
		return
	}
	r.checkOne(&w)
}

func (r *reader) checkOne(w *Workload) {
	r.nWorkloads++
	r.nContainers += len(w.Containers)
	if c := r.check.run(w); c.t != nil || len(c.rs) > 0 {
		r.done = append(r.done, c)
	}
}

// finish links the ConfigMaps into the workloads at the end of the input, and with check,
// checks those that waited for them and puts the checked back in reading order.
func (r *reader) finish() {
	r.link()
	if r.check == nil {
		return
	}
	for i := range r.out {
		r.checkOne(&r.out[i])
	}
	r.out = nil
	sort.SliceStable(r.done, func(i, j int) bool { return r.done[i].seq < r.done[j].seq })
}

// yamlError turns yaml.v3's "yaml: line N: msg" into a ReadError at line N.
func (r *reader) yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(num); err == nil {
				line, msg = l, tail
			}
		}
	}
	return &ReadError{File: r.file, Line: line, Msg: "not valid YAML: " + msg}
}

func (r *reader) errorf(n *yaml.Node, path, format string, args ...any) error {
	return &ReadError{File: r.file, Line: n.Line, Msg: path + ": " + fmt.Sprintf(format, args...)}
}

// object reads one Kubernetes object; path is where it sits ("" at the top, "items[3]" in a
// List).
func (r *reader) object(obj *yaml.Node, path string, depth int) error {
	kindNode, err := r.get(obj, "kind", path)
	if err != nil || kindNode == nil {
		return err
	}
	kind, err := r.str(kindNode, join(path, "kind"))
	if err != nil {
		return err
	}
	if kind == "List" || strings.HasSuffix(kind, "List") {
		if depth >= maxListDepth {
			return r.errorf(obj, join(path, "items"), "Lists nested more than %d deep", maxListDepth)
		}
		if depth == 0 && r.streamed != nil {
			// The items were read one by one as the document streamed past (stream.go).
			if r.streamed.err != nil {
				return r.streamed.err
			}
			r.found.add(r.streamed.found)
			return nil
		}
		items, err := r.seq(obj, "items", path)
		if err != nil {
			return err
		}
		for i, it := range items {
			p := fmt.Sprintf("%s[%d]", join(path, "items"), i)
			if it.Kind != yaml.MappingNode {
				return r.errorf(it, p, "want an object, got %s", describe(it))
			}
			if err := r.object(it, p, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	var specPath []string
	switch kind {
	case "Pod":
		specPath = []string{"spec"}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job":
		specPath = []string{"spec", "template", "spec"}
	case "CronJob":
		specPath = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	case "Rollout":
		// Argo Rollouts' Deployment: the same template. Another group's Rollout is not one.
		av, err := r.optStr(obj, "apiVersion", path)
		if err != nil || !strings.HasPrefix(av, "argoproj.io/") {
			return err
		}
		specPath = []string{"spec", "template", "spec"}
	case "ConfigMap":
		r.configMap(obj, path)
		return nil
	default:
		return nil
	}
	w := Workload{File: r.file, Kind: kind, Line: obj.Line, Grace: DefaultGrace}
	meta, err := r.mapping(obj, "metadata", path)
	if err != nil {
		return err
	}
	if meta != nil {
		if n, err := r.get(meta, "name", join(path, "metadata")); err != nil {
			return err
		} else if n != nil {
			if w.Name, err = r.str(n, join(path, "metadata.name")); err != nil {
				return err
			}
		}
	}
	if err := r.readIgnore(obj, path, false, &w); err != nil {
		return err
	}
	spec, p := obj, path
	tmpl, tmplPath := obj, path // the mapping holding the pod spec, whose metadata is the pod's
	for _, f := range specPath {
		tmpl, tmplPath = spec, p
		next, err := r.mapping(spec, f, p)
		if err != nil {
			return err
		}
		p = join(p, f)
		if next == nil {
			return nil // no pod template: nothing to check
		}
		spec = next
	}
	if tmpl != obj {
		if err := r.readIgnore(tmpl, tmplPath, true, &w); err != nil {
			return err
		}
	}
	if err := r.podSpec(spec, p, &w); err != nil {
		return err
	}
	r.appMeta(obj, tmpl, path, &w)
	r.add(w)
	return nil
}

func (r *reader) podSpec(spec *yaml.Node, path string, w *Workload) error {
	g, err := r.get(spec, "terminationGracePeriodSeconds", path)
	if err != nil {
		return err
	}
	if g != nil {
		secs, err := r.int(g, join(path, "terminationGracePeriodSeconds"), 64)
		if err != nil {
			return err
		}
		// A negative value is stored as written (the API server only warns), and reported by
		// the grace-negative rule.
		w.Grace, w.GraceSet, w.GraceLine = seconds(secs), true, g.Line
	}
	for _, f := range []struct {
		key string
		to  *bool
	}{{"hostNetwork", &w.HostNetwork}, {"shareProcessNamespace", &w.SharePID}} {
		if n, err := r.get(spec, f.key, path); err != nil {
			return err
		} else if n != nil {
			*f.to = yaml11True(n)
		}
	}
	if err := r.containers(spec, path, "containers", w); err != nil {
		return err
	}
	if err := r.containers(spec, path, "initContainers", w); err != nil {
		return err
	}
	r.volumes(spec, path, w)
	return nil
}

// containers appends the pod's containers, or of its initContainers the native sidecars: those
// with restartPolicy Always, and nothing else (podutil.IsRestartableInitContainer; the API server
// refuses any other value). Plain init containers are not read.
func (r *reader) containers(spec *yaml.Node, path, key string, w *Workload) error {
	items, err := r.seq(spec, key, path)
	if err != nil {
		return err
	}
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", join(path, key), i)
		if it.Kind != yaml.MappingNode {
			return r.errorf(it, p, "want a container (a mapping), got %s", describe(it))
		}
		sidecar := key == "initContainers"
		if sidecar {
			if rp, err := r.optStr(it, "restartPolicy", p); err != nil || rp != "Always" {
				if err != nil {
					return err
				}
				continue
			}
		}
		c, err := r.container(it, p)
		if err != nil {
			return err
		}
		c.Sidecar = sidecar
		w.Containers = append(w.Containers, c)
	}
	return nil
}

func (r *reader) container(n *yaml.Node, path string) (Container, error) {
	c := Container{Line: n.Line}
	var err error
	if c.Name, err = r.optStr(n, "name", path); err != nil {
		return c, err
	}
	if name, _ := r.get(n, "name", path); name != nil {
		c.Line = name.Line
	}
	if c.Image, err = r.optStr(n, "image", path); err != nil {
		return c, err
	}
	if img, _ := r.get(n, "image", path); img != nil {
		c.ImageLine = img.Line
	}
	if c.Command, c.CommandLines, err = r.strList(n, "command", path); err != nil {
		return c, err
	}
	if c.Args, c.ArgsLines, err = r.strList(n, "args", path); err != nil {
		return c, err
	}
	envs, err := r.seq(n, "env", path)
	if err != nil {
		return c, err
	}
	for i, e := range envs {
		p := fmt.Sprintf("%s[%d]", join(path, "env"), i)
		if e.Kind != yaml.MappingNode {
			return c, r.errorf(e, p, "want a name and a value, got %s", describe(e))
		}
		v := EnvVar{Line: e.Line, Known: true}
		if v.Name, err = r.optStr(e, "name", p); err != nil {
			return c, err
		}
		if v.Value, err = r.optStr(e, "value", p); err != nil {
			return c, err
		}
		if vf, err := r.get(e, "valueFrom", p); err != nil {
			return c, err
		} else if vf != nil {
			v.Known = false
		}
		c.Env = append(c.Env, v)
	}
	if ef, err := r.get(n, "envFrom", path); err != nil {
		return c, err
	} else if ef != nil {
		c.EnvFrom = true
	}
	ports, err := r.seq(n, "ports", path)
	if err != nil {
		return c, err
	}
	for i, pn := range ports {
		p := fmt.Sprintf("%s[%d]", join(path, "ports"), i)
		if pn.Kind != yaml.MappingNode {
			return c, r.errorf(pn, p, "want a port (a mapping), got %s", describe(pn))
		}
		port := Port{Line: pn.Line}
		if port.Name, err = r.optStr(pn, "name", p); err != nil {
			return c, err
		}
		if port.Protocol, err = r.optStr(pn, "protocol", p); err != nil {
			return c, err
		}
		if num, err := r.get(pn, "containerPort", p); err != nil {
			return c, err
		} else if num != nil {
			v, err := r.int(num, join(p, "containerPort"), 32)
			if err != nil {
				return c, err
			}
			port.Number = int(min(max(v, 0), 1<<16))
		}
		c.Ports = append(c.Ports, port)
	}
	r.mounts(n, path, &c)
	for _, kind := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
		pn, err := r.mapping(n, kind, path)
		if err != nil {
			return c, err
		}
		if pn == nil {
			continue
		}
		h, err := r.handler(pn, join(path, kind))
		if err != nil {
			return c, err
		}
		probe := Probe{Kind: kind, Handler: h}
		if g, err := r.get(pn, "terminationGracePeriodSeconds", join(path, kind)); err != nil {
			return c, err
		} else if g != nil {
			secs, err := r.int(g, join(join(path, kind), "terminationGracePeriodSeconds"), 64)
			if err != nil {
				return c, err
			}
			if secs > 0 {
				probe.Grace, probe.GraceLine = seconds(secs), g.Line
			}
		}
		c.Probes = append(c.Probes, probe)
	}
	lc, err := r.mapping(n, "lifecycle", path)
	if err != nil || lc == nil {
		return c, err
	}
	p := join(path, "lifecycle")
	if ss, err := r.get(lc, "stopSignal", p); err != nil {
		return c, err
	} else if ss != nil {
		if c.StopSignal, err = r.str(ss, join(p, "stopSignal")); err != nil {
			return c, err
		}
		c.StopSignalLine = ss.Line
	}
	ps, err := r.mapping(lc, "preStop", p)
	if err != nil || ps == nil {
		return c, err
	}
	c.PreStop, err = r.handler(ps, join(p, "preStop"))
	return c, err
}

func (r *reader) handler(n *yaml.Node, path string) (*Handler, error) {
	h := &Handler{Line: n.Line}
	if ex, err := r.mapping(n, "exec", path); err != nil {
		return nil, err
	} else if ex != nil {
		h.IsExec = true
		if h.Exec, _, err = r.strList(ex, "command", join(path, "exec")); err != nil {
			return nil, err
		}
	}
	if sl, err := r.mapping(n, "sleep", path); err != nil {
		return nil, err
	} else if sl != nil {
		s, err := r.get(sl, "seconds", join(path, "sleep"))
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, r.errorf(sl, join(path, "sleep"), "seconds is missing")
		}
		if h.Sleep, err = r.int(s, join(path, "sleep.seconds"), 64); err != nil {
			return nil, err
		}
		if h.Sleep < 0 {
			return nil, r.errorf(s, join(path, "sleep.seconds"), "must be 0 or more, got %d", h.Sleep)
		}
		h.IsSleep = true
	}
	if tcp, err := r.get(n, "tcpSocket", path); err != nil {
		return nil, err
	} else if tcp != nil {
		h.IsTCP = true
	}
	hg, err := r.mapping(n, "httpGet", path)
	if err != nil || hg == nil {
		return h, err
	}
	p := join(path, "httpGet")
	g := &HTTPGet{}
	if g.Path, err = r.optStr(hg, "path", p); err != nil {
		return nil, err
	}
	if g.Host, err = r.optStr(hg, "host", p); err != nil {
		return nil, err
	}
	if g.Scheme, err = r.optStr(hg, "scheme", p); err != nil {
		return nil, err
	}
	port, err := r.get(hg, "port", p)
	if err != nil {
		return nil, err
	}
	if port != nil {
		if port.Kind != yaml.ScalarNode {
			return nil, r.errorf(port, join(p, "port"), "want a number or a name, got %s", describe(port))
		}
		if port.Tag == "!!bool" || port.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 && yaml11Bool(port.Value) {
			// kubectl's YAML 1.1 reads yes, on, y as booleans, which the API server refuses here.
			return nil, r.errorf(port, join(p, "port"), "want a number or a name, got %s", describe(port))
		}
		if port.Tag == "!!int" || port.Tag == "!!float" {
			v, err := r.int(port, join(p, "port"), 32)
			if err != nil {
				return nil, err
			}
			g.Port = int(min(max(v, 0), 1<<16))
		} else if why := portNameProblem(port.Value); why != "" {
			return nil, r.errorf(port, join(p, "port"), "%q is a port name, which the API server refuses: %s", port.Value, why)
		} else {
			g.PortName = port.Value
		}
	}
	hdrs, err := r.seq(hg, "httpHeaders", p)
	if err != nil {
		return nil, err
	}
	for i, hn := range hdrs {
		hp := fmt.Sprintf("%s[%d]", join(p, "httpHeaders"), i)
		if hn.Kind != yaml.MappingNode {
			return nil, r.errorf(hn, hp, "want a name and a value, got %s", describe(hn))
		}
		var hd Header
		if hd.Name, err = r.optStr(hn, "name", hp); err != nil {
			return nil, err
		}
		if hd.Value, err = r.optStr(hn, "value", hp); err != nil {
			return nil, err
		}
		g.Headers = append(g.Headers, hd)
	}
	h.HTTP = g
	return h, nil
}

// The helpers below read one field of a mapping. A field that is absent or null is nil / zero;
// a field of the wrong shape is an error naming its path.

// get returns the value of key in mapping m (following aliases and merge keys), or nil when the
// key is absent or null. A key given twice is an error, as it is for kubectl.
func (r *reader) get(m *yaml.Node, key, path string) (*yaml.Node, error) {
	v, found, err := r.lookup(m, key, join(path, key), 0, map[*yaml.Node]bool{})
	if err != nil || !found || isNull(v) {
		return nil, err
	}
	return v, nil
}

// lookup finds key in m, then in the mappings m merges, depth first. seen holds the mappings
// already searched: merge keys can name the same anchor many times over, and searching it
// again would make the walk exponential in the nesting.
func (r *reader) lookup(m *yaml.Node, key, path string, depth int, seen map[*yaml.Node]bool) (*yaml.Node, bool, error) {
	if seen[m] {
		return nil, false, nil
	}
	seen[m] = true
	r.visits++
	if depth > maxMergeDepth {
		return nil, false, r.errorf(m, path, "merge keys (<<) nested more than %d deep", maxMergeDepth)
	}
	var val *yaml.Node
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := resolve(m.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			continue
		}
		switch {
		case k.Value == key && k.Tag != "!!merge":
			if val != nil {
				return nil, false, r.errorf(k, path, "given twice (lines %d and %d)", val.Line, k.Line)
			}
			val = m.Content[i+1]
		case k.Tag == "!!merge":
			merges = append(merges, m.Content[i+1])
		}
	}
	if val != nil {
		return resolveOrSelf(val), true, nil
	}
	// "<<: *base" or "<<: [*a, *b]": the first mapping holding the key wins.
	for _, mg := range merges {
		mg = resolve(mg)
		if mg == nil {
			continue
		}
		srcs := []*yaml.Node{mg}
		if mg.Kind == yaml.SequenceNode {
			srcs = mg.Content
		}
		for _, s := range srcs {
			s = resolve(s)
			if s == nil || s.Kind != yaml.MappingNode {
				continue
			}
			if v, ok, err := r.lookup(s, key, path, depth+1, seen); err != nil || ok {
				return v, ok, err
			}
		}
	}
	return nil, false, nil
}

// mapping returns key's value, which must be a mapping, or nil.
func (r *reader) mapping(m *yaml.Node, key, path string) (*yaml.Node, error) {
	v, err := r.get(m, key, path)
	if err != nil || v == nil {
		return nil, err
	}
	if v.Kind != yaml.MappingNode {
		return nil, r.errorf(v, join(path, key), "want a mapping, got %s", describe(v))
	}
	return v, nil
}

// seq returns the elements of key's value, which must be a sequence, aliases resolved.
func (r *reader) seq(m *yaml.Node, key, path string) ([]*yaml.Node, error) {
	v, err := r.get(m, key, path)
	if err != nil || v == nil {
		return nil, err
	}
	if v.Kind != yaml.SequenceNode {
		return nil, r.errorf(v, join(path, key), "want a list, got %s", describe(v))
	}
	out := make([]*yaml.Node, 0, len(v.Content))
	for _, e := range v.Content {
		if e = resolve(e); e != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// strList reads a list of strings; any scalar counts as its text. Unset is nil, set but empty is
// a non-nil empty slice (an empty command still replaces the image's ENTRYPOINT).
func (r *reader) strList(m *yaml.Node, key, path string) ([]string, []int, error) {
	v, err := r.get(m, key, path)
	if err != nil || v == nil {
		return nil, nil, err
	}
	if v.Kind != yaml.SequenceNode {
		return nil, nil, r.errorf(v, join(path, key), "want a list of strings, got %s", describe(v))
	}
	out, lines := make([]string, 0, len(v.Content)), make([]int, 0, len(v.Content))
	for i, e := range v.Content {
		e = resolve(e)
		if e == nil || e.Kind != yaml.ScalarNode {
			at := v
			if e != nil {
				at = e
			}
			return nil, nil, r.errorf(at, fmt.Sprintf("%s[%d]", join(path, key), i), "want a string, got %s", describe(e))
		}
		out, lines = append(out, e.Value), append(lines, e.Line)
	}
	return out, lines, nil
}

func (r *reader) str(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", r.errorf(n, path, "want a string, got %s", describe(n))
	}
	return n.Value, nil
}

// optStr reads an optional string field: "" when absent or null.
func (r *reader) optStr(m *yaml.Node, key, path string) (string, error) {
	v, err := r.get(m, key, path)
	if err != nil || v == nil {
		return "", err
	}
	return r.str(v, join(path, key))
}

// int reads an integer field of bits bits (32 or 64) as the API server gets it. kubectl, and the
// API server itself for a YAML body, turn YAML into JSON through sigs.k8s.io/yaml, whose YAML 1.1
// reading takes 0x1e, 0o36, 036 and 1_000 as integers and 3e1, 30.0 and 30. as floats, and whose
// JSON writes a float that is whole as an integer literal (30); the JSON decoder then takes an
// integer literal that fits the field. So a whole number in any of those forms is read, with
// the value the API server stores; a fraction, a string, .inf or a number too large is not.
// kubernetes.md has the sources; numbers_test.go holds this against sigs.k8s.io/yaml.
func (r *reader) int(n *yaml.Node, path string, bits int) (int64, error) {
	notWhole := func() error {
		return r.errorf(n, path, "want a whole number, got %s", describe(n))
	}
	tooLarge := func() error {
		return r.errorf(n, path, "%s is out of range: the API server reads it as a %d-bit integer", describe(n), bits)
	}
	if n.Kind != yaml.ScalarNode {
		return 0, notWhole()
	}
	var v int64
	var f float64
	switch n.Tag {
	case "!!int":
		if err := n.Decode(&v); err != nil {
			if n.Decode(&f) == nil {
				return 0, tooLarge() // beyond int64, as uint64 or float
			}
			return 0, notWhole() // !!int 3e1: kubectl cannot convert it either
		}
	case "!!float":
		if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
			return 0, notWhole()
		}
		// encoding/json writes the float's shortest decimal form, 'f' below 1e21: the integer
		// the API server gets is that one (9.223372036854775e18 is 9223372036854775000, not
		// the float's exact 9223372036854774784).
		var err error
		if v, err = strconv.ParseInt(strconv.FormatFloat(f, 'f', -1, 64), 10, 64); err != nil || math.Abs(f) >= 1e21 {
			return 0, tooLarge()
		}
	default:
		return 0, notWhole()
	}
	if bits == 32 && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, tooLarge()
	}
	return v, nil
}

// portNameProblem is why the API server refuses a port name (an IntOrString that is a string):
// apimachinery's IsValidPortName, which validation applies to every httpGet's port. "" for a
// valid name. A quoted number is a name too, with no letter: the API server refuses `port:
// "8099"` (must contain at least one letter), which the kubelet would have read as 8099.
func portNameProblem(name string) string {
	letter, digits := false, true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z':
			letter, digits = true, false
		case c >= '0' && c <= '9':
		case c == '-':
			digits = false
		default:
			return "it must hold only a-z, 0-9 and hyphens"
		}
	}
	switch {
	case name == "":
		return "it is empty"
	case len(name) > 15:
		return "it is longer than 15 characters"
	case digits:
		return "a name needs a letter; a number is written without quotes"
	case !letter:
		return "it must hold a letter (a-z)"
	case strings.Contains(name, "--"):
		return "it must not hold two hyphens in a row"
	case name[0] == '-' || name[len(name)-1] == '-':
		return "it must not begin or end with a hyphen"
	}
	return ""
}

// yaml11Bool says whether a plain scalar is one YAML 1.1 (sigs.k8s.io/yaml, kubectl's reading)
// takes as a boolean where yaml.v3 sees a string.
func yaml11Bool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}

// yaml11True says whether n is true as kubectl reads it: YAML 1.1 (sigs.k8s.io/yaml) takes
// True, TRUE, yes, on and y as true, where yaml.v3 sees only true (and True, TRUE) as booleans.
// Quoted, it is a string, which kubectl refuses for a boolean field.
func yaml11True(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
		return false
	}
	switch n.Value {
	case "true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
		return true
	}
	return false
}

// excessiveAliasing says whether the document under n is mostly what its aliases repeat, by the
// rule YAML's decoders apply, yaml.v3's and kubectl's (sigs.k8s.io/yaml: go-yaml v2): once over
// 100 of the nodes decoded came through an alias and over 1,000 were decoded, the share that came
// through one may be at most 0.99, falling to 0.10 from 400,000 nodes decoded to 4,000,000.
// kubectl refuses such a document ("document contains excessive aliasing"); the reader, which
// reads an alias's node each time it meets the alias, would otherwise build a few kilobytes of
// aliases of aliases into gigabytes of containers. The walk stops where the rule trips, so it
// costs what a decoder's would.
func excessiveAliasing(n *yaml.Node) bool {
	var decoded, aliased int
	expanding := map[*yaml.Node]bool{} // the anchors being expanded: one that holds its own alias ends there
	var walk func(n *yaml.Node, inAlias bool) bool
	walk = func(n *yaml.Node, inAlias bool) bool {
		decoded++
		if inAlias {
			aliased++
		}
		if aliased > 100 && decoded > 1000 && float64(aliased)/float64(decoded) > allowedAliasRatio(decoded) {
			return true
		}
		if n.Kind == yaml.AliasNode {
			a := n.Alias
			if a == nil || expanding[a] {
				return false
			}
			expanding[a] = true
			defer delete(expanding, a)
			return walk(a, true)
		}
		for _, c := range n.Content {
			if walk(c, inAlias) {
				return true
			}
		}
		return false
	}
	return walk(n, false)
}

// allowedAliasRatio is the decoders' limit on the share of nodes decoded through an alias.
func allowedAliasRatio(decoded int) float64 {
	const low, high = 400_000, 4_000_000
	switch {
	case decoded <= low:
		return 0.99
	case decoded >= high:
		return 0.10
	default:
		return 0.99 - 0.89*float64(decoded-low)/float64(high-low)
	}
}

// aliasing is excessiveAliasing as the error that refuses the document.
func (r *reader) aliasing(n *yaml.Node, path string) error {
	if !excessiveAliasing(n) {
		return nil
	}
	if path == "" {
		path = "document"
	}
	return r.errorf(n, path, "excessive aliasing: its aliases repeat far more than it holds (kubectl refuses it too)")
}

// resolve follows aliases to the node they name; nil for a dangling or circular alias chain.
func resolve(n *yaml.Node) *yaml.Node {
	for range maxMergeDepth {
		if n == nil || n.Kind != yaml.AliasNode {
			return n
		}
		n = n.Alias
	}
	return nil
}

// resolveOrSelf is resolve for a value known to be present: a broken alias stays an alias node,
// which every caller then reports as the wrong shape.
func resolveOrSelf(n *yaml.Node) *yaml.Node {
	if r := resolve(n); r != nil {
		return r
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names a node's shape for error messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an unresolvable alias"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("the string %q", v)
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("%q", v)
	}
	return "something else"
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func seconds(s int64) time.Duration {
	const maxSecs = int64(1<<63-1) / int64(time.Second)
	return time.Duration(max(min(s, maxSecs), -maxSecs)) * time.Second
}
