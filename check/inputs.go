package check

// What `drainit check` reads: files, directories, patterns and standard input, as docs/check.md
// ("What it reads") tells users. A named file's trouble stops the check. A found file that cannot
// be read, or looks like a manifest but is malformed, is a Problem; any other found file that does
// not read is skipped quietly. A walk does not follow symbolic links to directories, so a link
// cycle cannot loop it, and reads in a fixed order.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// StdinName is the file name findings read from standard input carry.
const StdinName = "<stdin>"

// Problem is a found file that could not be checked: it could not be read, or it looks like a
// Kubernetes manifest but is malformed. Problems make the exit status 2; the check goes on.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// String is the problem as stderr shows it: file:line: message, the file escaped if its name
// holds control characters.
func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", displayName(p.File), p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", displayName(p.File), p.Message)
}

// Inputs is what the command line's arguments hold, checked as they were read: the results,
// and how much was checked. The Workloads are not kept, so that memory does not grow with the
// input (a 20 MiB List of 73,111 Deployments).
type Inputs struct {
	Results    []Result   // by pod template, in reading order, then by line
	Templates  []Template // with ReadOptions.Templates: every pod template, in reading order
	Workloads  int        // the pod templates checked
	Containers int        // their containers
	Paths      []string   // the files read, in order; "-" for standard input
	Problems   []Problem  // found files that could not be checked
	Notes      []string   // what a walk left out on purpose, and how to check it

	exclude   []globPattern
	excludedN int // found paths --exclude left out
}

// input is one file to read.
type input struct {
	path  string // "-" for standard input
	found bool   // found by a walk or a pattern, not named
}

// ReadOptions change what ReadInputs reads.
type ReadOptions struct {
	// Exclude are patterns (the syntax of pattern arguments, ** included) of paths that a
	// directory walk or a pattern does not take: they match the path as findings show it.
	// A file named on the command line is read whatever they say.
	Exclude []string

	// Lenient reads the files named on the command line as a walk reads the files it finds:
	// one that is not Kubernetes manifests is skipped quietly, a Helm chart's template or a
	// kustomize patch is left out with a note, and a malformed manifest is a problem rather than
	// the end of the check. For pre-commit, which names every staged YAML file.
	Lenient bool

	// Ignore are the rules whose results are marked ignored (--ignore; ids known to be rules).
	Ignore []string

	// Templates keeps a Template of every pod template, for a report that lists them (JUnit).
	Templates bool
}

// Template is what a report names a checked pod template by.
type Template struct {
	File, Kind, Name string
	Line             int
	Document         int    // as Workload's
	Source           string // as Workload's
	Containers       []string
}

// checking is how ReadInputs checks the workloads as they are read.
type checking struct {
	ignore    []string
	templates bool
}

// checked is what is kept of a workload once checked: its results, and its Template if asked.
type checked struct {
	seq  int // its place in the input
	line int
	t    *Template
	rs   []Result
}

func (c *checking) run(w *Workload) checked {
	k := checked{seq: w.seq, line: w.Line, rs: evaluate(w, c.ignore)}
	if c.templates {
		k.t = &Template{File: w.File, Kind: w.Kind, Name: w.Name, Line: w.Line}
		for _, ct := range w.Containers {
			k.t.Containers = append(k.t.Containers, ct.Name)
		}
	}
	return k
}

// ReadInputs reads what the arguments name, in order: files, directories (walked), patterns
// (expanded by drainit, ** included) and "-" for standard input; none at all means standard
// input. The error is for what was named: a path that cannot be read, a named file that is not
// valid manifests, a pattern that matches nothing, a malformed pattern. It is one line naming
// the culprit.
func ReadInputs(args []string, stdin io.Reader, opt ReadOptions) (*Inputs, error) {
	if len(args) == 0 {
		args = []string{"-"}
	}
	res := &Inputs{}
	for _, e := range opt.Exclude {
		g, err := parseExclude(e)
		if err != nil {
			return nil, err
		}
		res.exclude = append(res.exclude, g)
	}
	var ins []input
	seen := map[string]bool{}
	add := func(in input) {
		if key := fileKey(in.path); !seen[key] {
			seen[key] = true
			ins = append(ins, in)
		}
	}
	for _, arg := range args {
		if arg == "-" {
			add(input{path: "-"})
			continue
		}
		st, err := os.Stat(arg)
		switch {
		case err != nil && hasMeta(arg):
			files, err := res.expand(arg)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				add(input{path: f, found: true})
			}
		case err != nil:
			return nil, readFailed(arg, err)
		case st.IsDir():
			for _, f := range res.walk(arg, nil) {
				add(input{path: f, found: true})
			}
		case opt.Lenient:
			if chart := chartOf(arg); chart != "" {
				res.noteChart(chart)
			} else if dir := patchedBy(arg); dir != "" {
				res.notePatches(dir)
			} else {
				add(input{path: arg, found: true})
			}
		default:
			add(input{path: arg})
		}
	}
	check := &checking{ignore: opt.Ignore, templates: opt.Templates}
	for _, in := range ins {
		r := &reader{file: in.path, check: check}
		if in.path == "-" {
			r.file = StdinName
		}
		if err := res.read(r, in, stdin); err != nil {
			return nil, err
		}
		res.Paths = append(res.Paths, in.path)
		res.Workloads += r.nWorkloads
		res.Containers += r.nContainers
		for _, c := range r.done {
			i := -1 // the workload's Template, when kept
			if c.t != nil {
				i = len(res.Templates)
				res.Templates = append(res.Templates, *c.t)
			}
			for _, rs := range c.rs {
				rs.workload = i
				res.Results = append(res.Results, rs)
			}
		}
	}
	return res, nil
}

// fileKey is what tells two inputs apart: the same file named as k8s/a.yaml and by its
// absolute path is read once.
func fileKey(p string) string {
	if p == "-" {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// expand lists the files a pattern argument matches. Matching nothing is an error, unless
// what it met could not be read: then those problems, reported, say why.
func (res *Inputs) expand(arg string) ([]string, error) {
	g, err := parseGlob(arg)
	if err != nil {
		return nil, err
	}
	problems, excluded := len(res.Problems), res.excludedN
	files := res.walk(g.root, &g)
	switch {
	case len(files) > 0 || len(res.Problems) > problems:
		return files, nil
	case res.excludedN > excluded:
		return nil, fmt.Errorf("pattern %q matches no file that --exclude leaves in", arg)
	}
	return nil, fmt.Errorf("pattern %q matches no file", arg)
}

// headSize is how much of a found file is kept to tell, when it does not read, whether it was
// meant as a manifest: apiVersion and kind open every object, and a manifest's first object
// starts in its first lines, after a license header at most.
const headSize = 64 << 10

// read reads one input into r. A found file's trouble is recorded as a problem, or skipped; a
// named one's is the error.
func (res *Inputs) read(r *reader, in input, stdin io.Reader) error {
	if in.path == "-" {
		return readStream(r, stdin)
	}
	head, err := readFile(r, in.found)
	if err == nil || !in.found {
		return err
	}
	r.found = found{} // what was read before the trouble is not reported
	var re *ReadError
	if errors.As(err, &re) && !unreadable(re) && !looksLikeKubernetes(head) {
		return nil // not manifests: skipped quietly, unless it looks like one
	}
	res.problem(err)
	return nil
}

// readFile reads r's file once, keeping its head for a found one. A file whose size says it is
// over maxInput is refused before any of it is read.
func readFile(r *reader, found bool) ([]byte, error) {
	f, err := os.Open(r.file)
	if err != nil {
		return nil, readFailed(r.file, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > maxInput {
		return nil, tooLarge(r.file)
	}
	n := 0
	if found {
		n = headSize
	}
	return readHead(r, f, n)
}

func (res *Inputs) problem(err error) {
	res.Problems = append(res.Problems, ProblemOf(err))
}

// ProblemOf is err, a failure to read an input, as a Problem: with the file and line of a
// *ReadError, the message alone otherwise.
func ProblemOf(err error) Problem {
	var re *ReadError
	if errors.As(err, &re) {
		return Problem{File: re.File, Line: re.Line, Message: re.Msg}
	}
	return Problem{Message: err.Error()}
}

// kubernetesKeys finds the two keys every Kubernetes object has: in YAML at the start of a line,
// at any depth (the objects of a List, or of a top-level sequence, are indented), or quoted as
// JSON writes them, anywhere (JSON may be on one line).
var kubernetesKeys = regexp.MustCompile(`(?m)^[ \t]*(?:-[ \t]+)?(apiVersion|kind)[ \t]*:|"(apiVersion|kind)"[ \t]*:`)

// looksLikeKubernetes says whether a file that failed to read as manifests was meant to be
// one: it has both an apiVersion and a kind key. A Helm template or a broken Deployment does; a
// GitHub workflow, an Ansible playbook or a tsconfig.json does not.
func looksLikeKubernetes(data []byte) bool {
	var api, kind bool
	for _, m := range kubernetesKeys.FindAllSubmatch(data, -1) {
		switch string(m[1]) + string(m[2]) {
		case "apiVersion":
			api = true
		case "kind":
			kind = true
		}
		if api && kind {
			return true
		}
	}
	return false
}

// manifestExt says whether a directory walk reads a file.
func manifestExt(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func hidden(name string) bool {
	return strings.HasPrefix(name, ".") && name != "." && name != ".."
}

// walk lists the files below root that a directory argument (g nil: manifest extensions) or a
// pattern (g: what matches it) takes, sorted, minus Helm templates and kustomize patches. What
// cannot be read on the way is a problem.
func (res *Inputs) walk(root string, g *globPattern) []string {
	var files []string
	var kustomizations []string
	lookHidden := g != nil && g.allowsHidden()
	if st, err := os.Stat(root); g != nil && err == nil && !st.IsDir() {
		return nil // a pattern matches below a directory: "deploy.yaml/**" matches nothing
	}
	if st, err := os.Lstat(root); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		// A link named as the directory to walk is followed: the walk starts below it.
		root += string(filepath.Separator)
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if g != nil && p == root && errors.Is(err, fs.ErrNotExist) {
				return nil // a pattern whose directory does not exist matches nothing
			}
			res.problem(readFailed(p, err))
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel := ""
		if p != root {
			r, rerr := filepath.Rel(root, p)
			if rerr != nil {
				return nil
			}
			rel = filepath.ToSlash(r)
			if hidden(d.Name()) && !lookHidden {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if p != root && excluded(p, res.exclude) {
			res.excludedN++
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != root && d.Name() == "templates" && exists(filepath.Join(filepath.Dir(p), "Chart.yaml")) {
				res.noteChart(filepath.Dir(p))
				return filepath.SkipDir
			}
			if k := kustomizationFile(p); k != "" {
				kustomizations = append(kustomizations, k)
			}
			if g != nil && p != root && !g.mayContain(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if g != nil {
			if !g.match(rel) {
				return nil
			}
		} else if !manifestExt(d.Name()) {
			return nil
		}
		switch {
		case d.Type().IsRegular():
		case d.Type()&fs.ModeSymlink != 0:
			st, err := os.Stat(p)
			if err != nil {
				res.problem(readFailed(p, err))
				return nil
			}
			if !st.Mode().IsRegular() {
				return nil // a link to a directory is not followed
			}
		default:
			return nil // a socket, a device, a pipe
		}
		files = append(files, p)
		return nil
	})
	return res.dropPatches(files, kustomizations)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// kustomizationFile is the kustomization file in dir, or "". Only a regular file (after links)
// counts: a pipe would block the walk and a link to a device feed it without end; the walk
// skips either, as it skips them anywhere.
func kustomizationFile(dir string) string {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// dropPatches removes from files the patches the kustomization files name: strategic-merge
// patches are partial objects (a Deployment with only the container's preStop), whose missing
// fields the check would read as Kubernetes' defaults.
func (res *Inputs) dropPatches(files, kustomizations []string) []string {
	if len(kustomizations) == 0 {
		return files
	}
	patchOf := map[string]string{} // patch file → its kustomization's directory
	for _, k := range kustomizations {
		dir := filepath.Dir(k)
		for _, p := range kustomizePatches(k) {
			patchOf[filepath.Clean(filepath.Join(dir, filepath.FromSlash(p)))] = dir
		}
	}
	dropped := map[string]bool{}
	kept := files[:0:0]
	for _, f := range files {
		if dir, ok := patchOf[filepath.Clean(f)]; ok {
			dropped[dir] = true
			continue
		}
		kept = append(kept, f)
	}
	dirs := make([]string, 0, len(dropped))
	for d := range dropped {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		res.notePatches(d)
	}
	return kept
}

// note adds a note once.
func (res *Inputs) note(s string) {
	if !slices.Contains(res.Notes, s) {
		res.Notes = append(res.Notes, s)
	}
}

func (res *Inputs) noteChart(chart string) {
	chart = displayName(chart)
	res.note(fmt.Sprintf("%s: a Helm chart: its templates are manifests only once rendered: helm template %s | drainit check -", chart, chart))
}

func (res *Inputs) notePatches(dir string) {
	dir = displayName(dir)
	res.note(fmt.Sprintf("%s: kustomize patches left out (partial objects): kubectl kustomize %s | drainit check -", dir, dir))
}

// chartOf is the Helm chart whose templates/ holds file, or "".
func chartOf(file string) string {
	d := dirAbove(file, func(d string) bool {
		return filepath.Base(d) == "templates" && exists(filepath.Join(filepath.Dir(d), "Chart.yaml"))
	})
	if d == "" {
		return ""
	}
	return filepath.Dir(d)
}

// patchedBy is the directory of a kustomization, in file's directory or above it, that names
// file as a patch, or "".
func patchedBy(file string) string {
	want := filepath.Clean(file)
	return dirAbove(file, func(d string) bool {
		k := kustomizationFile(d)
		return k != "" && slices.ContainsFunc(kustomizePatches(k), func(p string) bool {
			return filepath.Clean(filepath.Join(d, filepath.FromSlash(p))) == want
		})
	})
}

// dirAbove is the first of file's directory and those above it, up to the root, that is, or "".
func dirAbove(file string, is func(dir string) bool) string {
	for d := filepath.Dir(file); ; {
		if is(d) {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// kustomizePatches reads the patch files a kustomization names. A kustomization that does not
// parse names none: it is read as a file of the walk like any other, and reported if broken.
func kustomizePatches(file string) []string {
	data, err := readSmall(file)
	if err != nil {
		return nil
	}
	var k struct {
		PatchesStrategicMerge []string `yaml:"patchesStrategicMerge"`
		Patches               []struct {
			Path string `yaml:"path"`
		} `yaml:"patches"`
		PatchesJSON6902 []struct {
			Path string `yaml:"path"`
		} `yaml:"patchesJson6902"`
	}
	if yaml.Unmarshal(data, &k) != nil {
		return nil
	}
	var out []string
	for _, p := range k.PatchesStrategicMerge {
		if !strings.ContainsAny(p, "\n:") { // an inline patch is YAML text, not a path
			out = append(out, p)
		}
	}
	for _, p := range append(k.Patches, k.PatchesJSON6902...) {
		if p.Path != "" {
			out = append(out, p.Path)
		}
	}
	return out
}

// readStream reads standard input, noting for each workload the document it came from and
// Helm's "# Source:" comment, since a line number in a pipe points nowhere a reader can open.
func readStream(r *reader, stdin io.Reader) error {
	t := &docTracker{r: stdin}
	if _, err := readHead(r, t, 0); err != nil {
		return err
	}
	t.flush()
	for i := range r.done {
		c := &r.done[i]
		d, ok := t.at(c.line)
		if !ok {
			continue
		}
		if c.t != nil {
			c.t.Document, c.t.Source = d.index, d.source
		}
		for j := range c.rs {
			c.rs[j].Document, c.rs[j].Source = d.index, d.source
		}
	}
	return nil
}

// streamDoc is one document of a stream: where its content starts, its number among the
// documents that have content, and the path its "# Source:" comment names.
type streamDoc struct {
	first  int
	index  int
	source string
}

// docTracker passes a stream through and notes its documents as it goes, without keeping the
// stream: only the start of the line being read.
type docTracker struct {
	r      io.Reader
	line   int    // lines completed
	head   []byte // the start of the current line, up to maxHead bytes
	inDoc  bool   // the current document's content has started
	source string // the "# Source:" comment seen before the content
	docs   []streamDoc
}

// maxHead is how much of a line the tracker looks at: enough for "# Source: " and a path.
const maxHead = 4 << 10

// Read passes the stream's bytes through, noting each line it completes.
func (t *docTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.keep(b)
			break
		}
		t.keep(b[:i])
		t.endLine()
		b = b[i+1:]
	}
	return n, err
}

func (t *docTracker) keep(b []byte) {
	if room := maxHead - len(t.head); room > 0 {
		t.head = append(t.head, b[:min(len(b), room)]...)
	}
}

// flush ends the last line, which may have no line break.
func (t *docTracker) flush() {
	if len(t.head) > 0 {
		t.endLine()
	}
}

func (t *docTracker) endLine() {
	t.line++
	text := bytes.TrimRight(t.head, "\r")
	t.head = t.head[:0]
	if isMarker(text) {
		t.inDoc, t.source = false, ""
		rest := bytes.TrimSpace(text[3:])
		if text[0] == '-' && len(rest) > 0 && rest[0] != '#' {
			t.content() // "--- {kind: Pod}": the content starts on the marker's line
		}
		return
	}
	if t.inDoc {
		return
	}
	trimmed := bytes.TrimSpace(text)
	if src, ok := bytes.CutPrefix(trimmed, []byte("# Source:")); ok && t.source == "" {
		t.source = string(bytes.TrimSpace(src))
		return
	}
	if len(trimmed) == 0 || trimmed[0] == '#' || trimmed[0] == '%' {
		return
	}
	t.content()
}

// isMarker says whether a line is a document marker: "---" or "...", then the line's end or a
// blank ("---#" and "...x" are plain scalars).
func isMarker(text []byte) bool {
	if !bytes.HasPrefix(text, []byte("---")) && !bytes.HasPrefix(text, []byte("...")) {
		return false
	}
	return len(text) == 3 || text[3] == ' ' || text[3] == '\t'
}

func (t *docTracker) content() {
	t.inDoc = true
	t.docs = append(t.docs, streamDoc{first: t.line, index: len(t.docs) + 1, source: t.source})
}

// at returns the document holding a line.
func (t *docTracker) at(line int) (streamDoc, bool) {
	i := sort.Search(len(t.docs), func(i int) bool { return t.docs[i].first > line })
	if i == 0 {
		return streamDoc{}, false
	}
	return t.docs[i-1], true
}
