package check

// What the app rules (apps.go, istio.go) read beyond a container's command, args and env: the
// pod template's Istio annotations and labels, the pod's ConfigMap volumes, the containers'
// volumeMounts, and the ConfigMaps of the same input (one file, or one stream such as
// `helm template … | drainit check -`), so that an nginx.conf shipped beside its Deployment is
// read where it is mounted.
//
// These are evidence, not what the check is about: a field of the wrong shape here is ignored
// (the rules then see less), never a ReadError, so that input the check read before still reads.
// A ConfigMap is not kept: only what its entries say about nginx (nginxconf.go), a few numbers
// per entry, so that a cluster's worth of ConfigMaps does not undo the streaming of stream.go.

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// podMeta is what the pod template's metadata says about a service mesh's sidecar (Istio, Linkerd). Each value keeps its
// line; a zero line means the key is absent.
type podMeta struct {
	proxyConfig   metaValue // annotation proxy.istio.io/config
	inject        metaValue // annotation or label sidecar.istio.io/inject
	nativeSidecar metaValue // annotation sidecar.istio.io/nativeSidecar
	linkerdInject metaValue // annotation linkerd.io/inject
}

// metaValue is an annotation's or label's value and where it is. For a block scalar (`|`),
// line is the line of the indicator and text starts on the next.
type metaValue struct {
	value string
	line  int
	block bool // a literal block scalar: the value's lines are the file's from line+1
}

// volume is a pod volume the rules can see into: a ConfigMap's entries.
type volume struct {
	name      string
	configMap string
	items     []volumeItem // nil: every key, as a file named by the key
}

// volumeItem maps a ConfigMap key to a file path in the volume.
type volumeItem struct{ key, path string }

// mount is one of a container's volumeMounts.
type mount struct {
	volume    string
	mountPath string
	subPath   string
}

// configMap is what the check keeps of a ConfigMap: its name and, per entry, what an nginx
// configuration in it says.
type configMap struct {
	name, namespace string
	entries         []confEntry
}

// confEntry is one data entry of a ConfigMap, read as an nginx configuration.
type confEntry struct {
	key   string
	nginx nginxMain
}

// mountedConf is a ConfigMap entry mounted into a container, as a file at path.
type mountedConf struct {
	path      string
	configMap string
	key       string
	nginx     nginxMain
}

// appMeta reads the object's namespace and the pod template's Istio annotations and labels.
// tmpl is the mapping that holds the pod spec (the object itself for a Pod).
func (r *reader) appMeta(obj, tmpl *yaml.Node, path string, w *Workload) {
	if meta, err := r.mapping(obj, "metadata", path); err == nil && meta != nil {
		w.namespace, _ = r.optStr(meta, "namespace", join(path, "metadata"))
	}
	meta, err := r.mapping(tmpl, "metadata", path)
	if err != nil || meta == nil {
		return
	}
	if ann, err := r.mapping(meta, "annotations", path); err == nil && ann != nil {
		w.podMeta.proxyConfig = r.metaValue(ann, "proxy.istio.io/config", path)
		w.podMeta.inject = r.metaValue(ann, "sidecar.istio.io/inject", path)
		w.podMeta.nativeSidecar = r.metaValue(ann, "sidecar.istio.io/nativeSidecar", path)
		w.podMeta.linkerdInject = r.metaValue(ann, "linkerd.io/inject", path)
	}
	if labels, err := r.mapping(meta, "labels", path); err == nil && labels != nil && w.podMeta.inject.line == 0 {
		// The label is how Istio documents it; the annotation is its older form.
		w.podMeta.inject = r.metaValue(labels, "sidecar.istio.io/inject", path)
	}
}

func (r *reader) metaValue(m *yaml.Node, key, path string) metaValue {
	n, err := r.get(m, key, path)
	if err != nil || n == nil || n.Kind != yaml.ScalarNode {
		return metaValue{}
	}
	return metaValue{value: n.Value, line: n.Line, block: n.Style&yaml.LiteralStyle != 0}
}

// volumes reads the pod's ConfigMap volumes.
func (r *reader) volumes(spec *yaml.Node, path string, w *Workload) {
	vs, err := r.seq(spec, "volumes", path)
	if err != nil {
		return
	}
	for _, vn := range vs {
		if vn.Kind != yaml.MappingNode {
			continue
		}
		name, err := r.optStr(vn, "name", path)
		if err != nil || name == "" {
			continue
		}
		cm, err := r.mapping(vn, "configMap", path)
		if err != nil || cm == nil {
			continue
		}
		v := volume{name: name}
		if v.configMap, err = r.optStr(cm, "name", path); err != nil || v.configMap == "" {
			continue
		}
		if items, err := r.seq(cm, "items", path); err == nil && items != nil {
			v.items = []volumeItem{}
			for _, it := range items {
				if it.Kind != yaml.MappingNode {
					continue
				}
				k, err1 := r.optStr(it, "key", path)
				p, err2 := r.optStr(it, "path", path)
				if err1 == nil && err2 == nil && k != "" && p != "" {
					v.items = append(v.items, volumeItem{k, p})
				}
			}
		}
		w.volumes = append(w.volumes, v)
	}
}

// mounts reads a container's volumeMounts. A subPathExpr's file is not known: it is skipped.
func (r *reader) mounts(n *yaml.Node, path string, c *Container) {
	ms, err := r.seq(n, "volumeMounts", path)
	if err != nil {
		return
	}
	for _, mn := range ms {
		if mn.Kind != yaml.MappingNode {
			continue
		}
		var m mount
		var e1, e2, e3 error
		m.volume, e1 = r.optStr(mn, "name", path)
		m.mountPath, e2 = r.optStr(mn, "mountPath", path)
		m.subPath, e3 = r.optStr(mn, "subPath", path)
		if expr, _ := r.optStr(mn, "subPathExpr", path); expr != "" || e1 != nil || e2 != nil || e3 != nil || m.volume == "" || m.mountPath == "" {
			continue
		}
		c.mounts = append(c.mounts, m)
	}
}

// configMap keeps what a ConfigMap's data entries say as nginx configurations.
func (r *reader) configMap(obj *yaml.Node, path string) {
	cm := configMap{}
	if meta, err := r.mapping(obj, "metadata", path); err == nil && meta != nil {
		cm.name, _ = r.optStr(meta, "name", path)
		cm.namespace, _ = r.optStr(meta, "namespace", path)
	}
	data, err := r.mapping(obj, "data", path)
	if err != nil || data == nil || cm.name == "" {
		return
	}
	for i := 0; i+1 < len(data.Content); i += 2 {
		k, v := resolve(data.Content[i]), resolve(data.Content[i+1])
		if k == nil || v == nil || k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			continue
		}
		// A literal block's text starts on the line after its indicator; anything else is
		// placed on the value's line (a quoted or folded string's lines are not the file's).
		first, exact := v.Line, false
		if v.Style&yaml.LiteralStyle != 0 {
			first, exact = v.Line+1, true
		}
		cm.entries = append(cm.entries, confEntry{key: k.Value, nginx: scanNginx(v.Value, first, exact)})
	}
	r.cms = append(r.cms, cm)
}

// link gives each container the ConfigMap entries of the same input mounted into it, as files.
// A ConfigMap matches a volume by name, and by namespace when both name one.
func (r *reader) link() {
	if len(r.cms) == 0 {
		return
	}
	for i := range r.out {
		w := &r.out[i]
		for j := range w.Containers {
			c := &w.Containers[j]
			for _, m := range c.mounts {
				v := w.findVolume(m.volume)
				if v == nil {
					continue
				}
				cm := r.findConfigMap(v.configMap, w.namespace)
				if cm == nil {
					continue
				}
				c.files = append(c.files, mountedFiles(m, v, cm)...)
			}
		}
	}
}

// mountsConfigMap says whether a container mounts a ConfigMap volume, which link may fill.
func (w *Workload) mountsConfigMap() bool {
	for _, c := range w.Containers {
		for _, m := range c.mounts {
			if v := w.findVolume(m.volume); v != nil && v.configMap != "" {
				return true
			}
		}
	}
	return false
}

func (w *Workload) findVolume(name string) *volume {
	for i := range w.volumes {
		if w.volumes[i].name == name {
			return &w.volumes[i]
		}
	}
	return nil
}

// findConfigMap finds the last ConfigMap of that name, as kubectl apply would leave it.
func (r *reader) findConfigMap(name, ns string) *configMap {
	for i := len(r.cms) - 1; i >= 0; i-- {
		cm := &r.cms[i]
		if cm.name == name && (cm.namespace == "" || ns == "" || cm.namespace == ns) {
			return cm
		}
	}
	return nil
}

// mountedFiles lists the files a mount of a ConfigMap volume puts in the container: each
// entry (or each item) under mountPath, or with subPath the one at mountPath itself.
func mountedFiles(m mount, v *volume, cm *configMap) []mountedConf {
	files := v.items
	if files == nil {
		for _, e := range cm.entries {
			files = append(files, volumeItem{e.key, e.key})
		}
	}
	var out []mountedConf
	for _, f := range files {
		var at string
		switch {
		case m.subPath == "":
			at = path.Join(m.mountPath, f.path)
		case path.Clean(m.subPath) == path.Clean(f.path):
			at = path.Clean(m.mountPath)
		default:
			continue
		}
		for _, e := range cm.entries {
			if e.key == f.key {
				out = append(out, mountedConf{path: at, configMap: cm.name, key: e.key, nginx: e.nginx})
			}
		}
	}
	return out
}

// file returns the ConfigMap entry mounted at p, if any.
func (c *Container) file(p string) *mountedConf {
	for i := range c.files {
		if c.files[i].path == path.Clean(p) {
			return &c.files[i]
		}
	}
	return nil
}

// describe names a mounted entry for messages: `ConfigMap "web" key nginx.conf`.
func (f *mountedConf) describe() string {
	return fmt.Sprintf("ConfigMap %q key %s, mounted at %s", f.configMap, strings.TrimSpace(f.key), f.path)
}
