package check

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/drainit/drainit/integration/testenv"
)

// The tree in testdata/tree stands for a repository: manifests at several depths (.yaml, .yml,
// a .json List), a hidden directory and a hidden file holding manifests that must not be read,
// files that are YAML but not Kubernetes (a CI workflow, an Ansible playbook, a docker-compose
// file, a file that is not even valid YAML), a README, a Helm chart whose template is not YAML,
// a kustomize overlay whose patch is a partial Deployment, and one broken Deployment.

func readTree(t *testing.T, args []string, opt ReadOptions) *Inputs {
	t.Helper()
	in, err := ReadInputs(args, nil, opt)
	if err != nil {
		t.Fatalf("ReadInputs(%q): %v", args, err)
	}
	return in
}

func trimTree(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(filepath.ToSlash(p), "testdata/tree/")
	}
	return out
}

// TestWalkTree: a directory is walked in sorted order; hidden directories and files, Helm
// templates, kustomize patches and files without a manifest extension are not read; files that
// are not Kubernetes are read and skipped quietly; a broken manifest is a problem, not an
// error, and the rest is still read.
func TestWalkTree(t *testing.T) {
	in := readTree(t, []string{"testdata/tree"}, ReadOptions{Templates: true})
	want := []string{
		"apps/api/deploy.yml", "apps/api/service.yaml", "apps/web/deployment.yaml", "broken/deployment.yaml",
		"charts/web/Chart.yaml", "charts/web/values.yaml", "ci/broken.yaml", "ci/playbook.yml", "ci/workflow.yaml",
		"docker-compose.yml", "jobs/list.json", "nested/deeper/deepest/pod.yaml", "overlays/prod/kustomization.yaml",
	}
	if got := trimTree(in.Paths); !reflect.DeepEqual(got, want) {
		t.Errorf("files read:\n%q\nwant\n%q", got, want)
	}
	var names []string
	for _, w := range in.Templates {
		names = append(names, w.Kind+"/"+w.Name)
	}
	if got := strings.Join(names, " "); got != "Deployment/api Deployment/web CronJob/nightly Pod/deep" {
		t.Errorf("workloads: %s", got)
	}
	wantProblem := Problem{File: filepath.FromSlash("testdata/tree/broken/deployment.yaml"), Line: 9,
		Message: `spec.template.spec.terminationGracePeriodSeconds: want a whole number, got the string "soon"`}
	if !reflect.DeepEqual(in.Problems, []Problem{wantProblem}) {
		t.Errorf("problems: %+v", in.Problems)
	}
	if len(in.Notes) != 2 || !strings.Contains(in.Notes[0], "helm template "+filepath.FromSlash("testdata/tree/charts/web")+" | drainit check -") ||
		!strings.Contains(in.Notes[1], "kubectl kustomize "+filepath.FromSlash("testdata/tree/overlays/prod")+" | drainit check -") {
		t.Errorf("notes: %q", in.Notes)
	}
}

// TestWalkOrderAndRepeats: the arguments' order is kept, and a file named twice (here by
// itself and by its directory) is read once.
func TestWalkOrderAndRepeats(t *testing.T) {
	in := readTree(t, []string{"testdata/tree/nested", "testdata/tree/apps/web/deployment.yaml", "./testdata/tree/apps"}, ReadOptions{})
	want := []string{"nested/deeper/deepest/pod.yaml", "apps/web/deployment.yaml", "apps/api/deploy.yml", "apps/api/service.yaml"}
	if got := trimTree(in.Paths); !reflect.DeepEqual(got, want) {
		t.Errorf("files read: %q, want %q", got, want)
	}
}

// TestPatterns: drainit expands patterns itself, ** included, with the shells' rule that
// wildcards do not match hidden names; the walk's exclusions apply; a pattern that matches
// nothing, or is malformed, is an error naming it.
func TestPatterns(t *testing.T) {
	cases := []struct {
		pattern string
		want    []string
	}{
		{"testdata/tree/**/*.yaml", []string{"apps/api/service.yaml", "apps/web/deployment.yaml", "broken/deployment.yaml",
			"charts/web/Chart.yaml", "charts/web/values.yaml", "ci/broken.yaml", "ci/workflow.yaml", "nested/deeper/deepest/pod.yaml",
			"overlays/prod/kustomization.yaml"}},
		{"testdata/tree/apps/*/deploy*", []string{"apps/api/deploy.yml", "apps/web/deployment.yaml"}},
		{"testdata/tree/*/*/*.json", nil},
		{"testdata/tree/*/*.json", []string{"jobs/list.json"}},
		{"testdata/tree/.*/*.yaml", []string{".hidden/deployment.yaml"}},
		{"testdata/tree/.hidden-*", []string{".hidden-pod.yaml"}},
		{"testdata/tree/**/README*", []string{"README.md"}},
	}
	for _, c := range cases {
		in, err := ReadInputs([]string{c.pattern}, nil, ReadOptions{})
		if c.want == nil {
			if err == nil || err.Error() != `pattern "`+c.pattern+`" matches no file` {
				t.Errorf("%s: error %v, want that it matches no file", c.pattern, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.pattern, err)
			continue
		}
		if got := trimTree(in.Paths); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s reads\n%q\nwant\n%q", c.pattern, got, c.want)
		}
	}
	if _, err := ReadInputs([]string{"testdata/tree/[a-"}, nil, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "syntax error in pattern") {
		t.Errorf("malformed pattern: %v", err)
	}
	if _, err := ReadInputs([]string{"testdata/nowhere/**/*.yaml"}, nil, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Errorf("pattern in a directory that does not exist: %v", err)
	}
}

// TestNamedFilesStayStrict: a file named on the command line is the user's word that it is a
// manifest. Not YAML, or not an object, stops the check (the same files a walk skips quietly).
func TestNamedFilesStayStrict(t *testing.T) {
	for file, want := range map[string]string{
		"ci/broken.yaml":   "ci/broken.yaml:1: not valid YAML",
		"ci/playbook.yml":  "ci/playbook.yml:2: document 1 is a list, not a Kubernetes object",
		"missing.yaml":     "missing.yaml: cannot read: no such file or directory",
		"ci/workflow.yaml": "",
	} {
		p := filepath.FromSlash("testdata/tree/" + file)
		_, err := ReadInputs([]string{p}, nil, ReadOptions{})
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v, want no error (YAML without Kubernetes objects holds nothing to check)", file, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(filepath.ToSlash(err.Error()), "testdata/tree/"+want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

// TestUnreadableFound: a found file that cannot be read is a problem naming it; the walk goes
// on. A link to a file is followed, a link to a directory is not.
func TestUnreadableFound(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/pod.yaml", "kind: Pod\nmetadata: {name: a}\nspec:\n  containers: [{name: c}]\n")
	write("elsewhere/pod.yaml", "kind: Pod\nmetadata: {name: elsewhere}\nspec:\n  containers: [{name: c}]\n")
	for link, target := range map[string]string{"gone.yaml": "nowhere.yaml", "linked.yaml": "a/pod.yaml", "linkdir": "elsewhere"} {
		if err := os.Symlink(filepath.Join(dir, target), filepath.Join(dir, link)); err != nil {
			testenv.SkipUnlessCI(t, "no symbolic links here: "+err.Error())
		}
	}
	in := readTree(t, []string{dir}, ReadOptions{})
	var read []string
	for _, p := range in.Paths {
		read = append(read, strings.TrimPrefix(filepath.ToSlash(p), filepath.ToSlash(dir)+"/"))
	}
	if want := []string{"a/pod.yaml", "elsewhere/pod.yaml", "linked.yaml"}; !reflect.DeepEqual(read, want) {
		t.Errorf("read %q, want %q", read, want)
	}
	want := Problem{File: filepath.Join(dir, "gone.yaml"), Message: "cannot read: no such file or directory"}
	if !reflect.DeepEqual(in.Problems, []Problem{want}) {
		t.Errorf("problems %+v, want %+v", in.Problems, want)
	}
}

// TestExclude: --exclude leaves out found files and whole directories by their path as
// findings show it; a file named on the command line is read regardless.
func TestExclude(t *testing.T) {
	in := readTree(t, []string{"testdata/tree"}, ReadOptions{Exclude: []string{"**/broken/**", "testdata/tree/jobs/*.json", "**/ci"}})
	for _, p := range trimTree(in.Paths) {
		if strings.HasPrefix(p, "broken/") || strings.HasPrefix(p, "jobs/") || strings.HasPrefix(p, "ci/") {
			t.Errorf("%s read despite --exclude", p)
		}
	}
	if len(in.Problems) != 0 || len(in.Paths) != 8 {
		t.Errorf("read %q, problems %+v", in.Paths, in.Problems)
	}
	if _, err := ReadInputs([]string{"testdata/tree/broken/deployment.yaml"}, nil, ReadOptions{Exclude: []string{"**"}}); err == nil {
		t.Errorf("a named file must be read whatever --exclude says")
	}
	if _, err := ReadInputs([]string{"testdata/tree"}, nil, ReadOptions{Exclude: []string{"a/[b"}}); err == nil ||
		!strings.HasPrefix(err.Error(), `--exclude "a/[b": syntax error`) {
		t.Errorf("malformed --exclude: %v", err)
	}
}

// TestLooksLikeKubernetes decides which broken found files are reported.
func TestLooksLikeKubernetes(t *testing.T) {
	for in, want := range map[string]bool{
		"apiVersion: v1\nkind: Pod\nspec: {{ .Values }}\n":            true,
		"- apiVersion: v1\n  kind: Pod\n":                             true,
		`{"items": [{"apiVersion": "v1", "kind": "Pod"}]}`:            true,
		"apiVersion: v1\nspec: [\n":                                   false,
		"- hosts: all\n  tasks: []\n":                                 false,
		"# kind: Pod\n# apiVersion: v1\n":                             false,
		"{\n  // tsconfig\n  \"compilerOptions\": {\"kind\": 1}\n}\n": false,
	} {
		if got := looksLikeKubernetes([]byte(in)); got != want {
			t.Errorf("looksLikeKubernetes(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestStreamDocuments: from standard input each workload knows its document's number among
// the documents with content, and Helm's "# Source:" path when it has one; a List's items
// share their document. Reading the stream a byte at a time changes nothing.
func TestStreamDocuments(t *testing.T) {
	helm, err := os.ReadFile("testdata/streams/helm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	list := "# a comment-only document does not count\n---\n---\r\napiVersion: v1\r\nkind: List\r\nitems:\r\n" +
		"- kind: Pod\r\n  metadata: {name: one}\r\n  spec: {containers: [{name: c}]}\r\n" +
		"- kind: Pod\r\n  metadata: {name: two}\r\n  spec: {containers: [{name: c}]}\r\n" +
		"--- {kind: Pod, metadata: {name: inline}, spec: {containers: [{name: c}]}}\n" +
		"---\n# Source: x/templates/last.yaml\n# Source: not this one\nkind: Pod\nmetadata: {name: last}\nspec: {containers: [{name: c}]}"
	cases := []struct {
		in   string
		want string
	}{
		{string(helm), "shop:2:shop/templates/deployment.yaml shop-worker:3:shop/templates/worker.yaml plain:4:"},
		{list, "one:1: two:1: inline:2: last:3:x/templates/last.yaml"},
	}
	for _, c := range cases {
		for _, oneByte := range []bool{false, true} {
			var stdin io.Reader = strings.NewReader(c.in)
			if oneByte {
				stdin = iotest.OneByteReader(stdin)
			}
			in, err := ReadInputs([]string{"-"}, stdin, ReadOptions{Templates: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range in.Templates {
				got = append(got, w.Name+":"+strconv.Itoa(w.Document)+":"+w.Source)
				if w.File != StdinName {
					t.Errorf("file %q, want %q", w.File, StdinName)
				}
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Errorf("one byte at a time %v:\n got %s\nwant %s", oneByte, s, c.want)
			}
		}
	}
	// A file is not a stream: its line is all a reader needs.
	in := readTree(t, []string{"testdata/streams/helm.yaml"}, ReadOptions{Templates: true})
	for _, w := range in.Templates {
		if w.Document != 0 || w.Source != "" {
			t.Errorf("from a file: %+v", w)
		}
	}
}

// FuzzStream: whatever arrives on standard input, reading it never panics; when it reads, every
// workload has a document number, the numbers never decrease along the stream, and reading
// a byte at a time gives the same; and every output format writes the results. Seeds are in
// testdata/fuzz/FuzzStream.
func FuzzStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		opt := ReadOptions{Ignore: []string{RuleNoDrain}, Templates: true}
		in, err := ReadInputs([]string{"-"}, bytes.NewReader(data), opt)
		slow, slowErr := ReadInputs(nil, iotest.OneByteReader(bytes.NewReader(data)), opt)
		if (err == nil) != (slowErr == nil) {
			t.Fatalf("a byte at a time: %v, at once: %v", slowErr, err)
		}
		if err != nil {
			return
		}
		last := 0
		for i, w := range in.Templates {
			if w.Document < 1 || w.Document < last {
				t.Fatalf("workload %d (line %d): document %d after %d", i, w.Line, w.Document, last)
			}
			last = w.Document
			if s := slow.Templates[i]; s.Document != w.Document || s.Source != w.Source {
				t.Fatalf("workload %d: document %d %q a byte at a time, %d %q at once", i, s.Document, s.Source, w.Document, w.Source)
			}
		}
		rs := in.Results
		var out bytes.Buffer
		if err := WriteTextResults(&out, rs); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if err := WriteSARIF(&out, rs, in.Problems, SARIFOptions{Version: "fuzz", WorkDir: "/src"}); err != nil || !json.Valid(out.Bytes()) {
			t.Fatalf("SARIF: %v\n%s", err, out.Bytes())
		}
		out.Reset()
		if err := WriteJUnit(&out, in.Templates, rs, in.Problems, Info); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tests int `xml:"tests,attr"`
		}
		if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("JUnit is not XML: %v\n%s", err, out.Bytes())
		}
	})
}

// TestLenient: with Lenient, named files are read as a walk reads found ones: pre-commit names
// every staged YAML file, Helm templates, kustomize patches and playbooks included.
func TestLenient(t *testing.T) {
	var args []string
	for _, f := range []string{"ci/playbook.yml", "ci/broken.yaml", "charts/web/templates/deployment.yaml",
		"overlays/prod/prestop-patch.yaml", "broken/deployment.yaml", "apps/web/deployment.yaml"} {
		args = append(args, filepath.FromSlash("testdata/tree/"+f))
	}
	if _, err := ReadInputs(args, nil, ReadOptions{}); err == nil {
		t.Fatalf("without Lenient, the named playbook stops the check")
	}
	in := readTree(t, args, ReadOptions{Lenient: true, Templates: true})
	if got := trimTree(in.Paths); !reflect.DeepEqual(got, []string{"ci/playbook.yml", "ci/broken.yaml", "broken/deployment.yaml", "apps/web/deployment.yaml"}) {
		t.Errorf("read %q", got)
	}
	if len(in.Templates) != 1 || in.Templates[0].Name != "web" || len(in.Problems) != 1 || in.Problems[0].Line != 9 {
		t.Errorf("workloads %+v, problems %+v", in.Templates, in.Problems)
	}
	if len(in.Notes) != 2 || !strings.Contains(in.Notes[0], "helm template") || !strings.Contains(in.Notes[1], "kubectl kustomize") {
		t.Errorf("notes %q", in.Notes)
	}
	// A named path that does not exist is a mistake on the command line, lenient or not.
	if _, err := ReadInputs([]string{"testdata/tree/missing.yaml"}, nil, ReadOptions{Lenient: true}); err == nil {
		t.Errorf("a missing named file must stop the check")
	}
}

// TestWalkLinkedRoot: a symbolic link named as a directory, or as a pattern's directory, is
// walked (only links met inside a walk are not followed).
func TestWalkLinkedRoot(t *testing.T) {
	target, err := filepath.Abs("testdata/tree/apps")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "apps-link")
	if err := os.Symlink(target, link); err != nil {
		testenv.SkipUnlessCI(t, "no symbolic links here: "+err.Error())
	}
	for _, arg := range []string{link, filepath.Join(link, "**", "*.y*ml")} {
		in := readTree(t, []string{arg}, ReadOptions{})
		var got []string
		for _, p := range in.Paths {
			got = append(got, strings.TrimPrefix(filepath.ToSlash(p), filepath.ToSlash(link)+"/"))
		}
		if want := []string{"api/deploy.yml", "api/service.yaml", "web/deployment.yaml"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read %q, want %q", arg, got, want)
		}
	}
}

// TestTextEscapesNames: text output shows a file name with control characters, or bytes that
// are not UTF-8, Go-quoted, so that a name cannot act on the terminal or split a line; other
// names, spaces and accents included, are shown as they are.
func TestTextEscapesNames(t *testing.T) {
	evil := "evil\n\x1b[31mRED\x1b[0m\r\x1b]0;title\a\"q.yaml"
	for name, want := range map[string]string{
		evil:                `"evil\n\x1b[31mRED\x1b[0m\r\x1b]0;title\a\"q.yaml"`,
		"bad\xffutf8.yaml":  `"bad\xffutf8.yaml"`,
		"rlo\u202eyaml.txt": `"rlo\u202eyaml.txt"`,
		"k8s/my app/é.yaml": "k8s/my app/é.yaml",
		StdinName:           StdinName,
	} {
		rs := []Result{{Finding: Finding{File: name, Line: 3, Severity: Error, Rule: RuleNoDrain, Kind: "Pod", Name: "p", Message: "m"}}}
		var out bytes.Buffer
		if err := WriteTextResults(&out, rs); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); !strings.HasPrefix(got, want+":3: error: ") || strings.Count(got, "\n") != 1 {
			t.Errorf("finding line %q, want it to start with %s", got, want)
		}
		if got := (Problem{File: name, Line: 3, Message: "m"}).String(); got != want+":3: m" {
			t.Errorf("problem %q", got)
		}
		if got := (&ReadError{File: name, Msg: "m"}).Error(); got != want+": m" {
			t.Errorf("read error %q", got)
		}
	}
	rs := []Result{{Finding: Finding{File: StdinName, Line: 3, Severity: Error, Rule: RuleNoDrain, Kind: "Pod", Name: "p", Message: "m"},
		Document: 2, Source: "x/\x1b]0;t\a.yaml"}}
	var out bytes.Buffer
	if err := WriteTextResults(&out, rs); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasSuffix(got, ` [document 2, "x/\x1b]0;t\a.yaml"]`+"\n") {
		t.Errorf("Helm source from the stream not escaped: %q", got)
	}
}

// TestExcludeAbsolute: an absolute --exclude pattern matches the absolute paths a walk of an
// absolute directory shows, and no relative path.
func TestExcludeAbsolute(t *testing.T) {
	root, err := filepath.Abs("testdata/tree")
	if err != nil {
		t.Fatal(err)
	}
	ex := filepath.Join(root, "apps", "*", "*.y*ml")
	in := readTree(t, []string{root}, ReadOptions{Exclude: []string{ex}})
	for _, p := range in.Paths {
		if strings.Contains(filepath.ToSlash(p), "/apps/") {
			t.Errorf("%s read despite --exclude %s", p, ex)
		}
	}
	in = readTree(t, []string{"testdata/tree/apps"}, ReadOptions{Exclude: []string{"/**/apps/**"}})
	if len(in.Paths) != 3 {
		t.Errorf("an absolute pattern left out relative paths: read %q", in.Paths)
	}
}

// TestPatternProblems: a pattern whose only matches cannot be read is no "matches no file":
// they are reported as problems, as a walk reports them. A pattern whose matches --exclude
// leaves out says so.
func TestPatternProblems(t *testing.T) {
	dir := t.TempDir()
	for link, target := range map[string]string{"self.yaml": "self.yaml", "gone.yaml": "nowhere.yaml"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			testenv.SkipUnlessCI(t, "no symbolic links here: "+err.Error())
		}
	}
	for _, name := range []string{"self", "gone"} {
		in := readTree(t, []string{filepath.Join(dir, name+"*.yaml")}, ReadOptions{})
		if len(in.Problems) != 1 || in.Problems[0].File != filepath.Join(dir, name+".yaml") ||
			!strings.HasPrefix(in.Problems[0].Message, "cannot read: ") {
			t.Errorf("%s: problems %+v", name, in.Problems)
		}
	}
	_, err := ReadInputs([]string{"testdata/tree/apps/*/*.y*ml"}, nil, ReadOptions{Exclude: []string{"**/apps/*/*"}})
	if want := `pattern "testdata/tree/apps/*/*.y*ml" matches no file that --exclude leaves in`; fmt.Sprint(err) != want {
		t.Errorf("all excluded: %v, want %s", err, want)
	}
}

// TestSameFileTwice: a file named by a relative and an absolute path, or found again by a
// walk, is read once; a pattern below a file matches nothing, not the file.
func TestSameFileTwice(t *testing.T) {
	abs, err := filepath.Abs("testdata/tree/apps/web/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := readTree(t, []string{"testdata/tree/apps/web/deployment.yaml", abs, "testdata/tree/apps/web"}, ReadOptions{})
	if len(in.Paths) != 1 || in.Workloads != 1 {
		t.Errorf("read %q", in.Paths)
	}
	if _, err := ReadInputs([]string{"testdata/tree/apps/web/deployment.yaml/**"}, nil, ReadOptions{}); err == nil ||
		!strings.HasSuffix(err.Error(), "matches no file") {
		t.Errorf("a pattern below a file: %v", err)
	}
}
