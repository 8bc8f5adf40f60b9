package check

// Saying "we know": rules ignored for one object by an annotation, or for the whole run by
// --ignore. An ignored finding is not dropped: it is counted ("2 ignored"), kept in the json
// output with "ignored": true, and in SARIF as a suppressed result, so that a review can still
// see what was waved through.
//
// The annotation counts on the object's metadata and on its pod template's: a chart that lets
// its users set podAnnotations but not the Deployment's annotations can still carry it, and an
// annotation on a pod template does nothing else than ride along to the pods.

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// IgnoreAnnotation is the annotation that ignores rules for one object: its value is a
// comma-separated list of rule ids.
const IgnoreAnnotation = "drainit.io/ignore"

// RuleIgnoreAnnotation is the rule of an ignore annotation that names no rule of this drainit.
const RuleIgnoreAnnotation = "ignore-annotation"

// Annotation is a drainit.io/ignore annotation as written, and where.
type Annotation struct {
	Value      string
	Line       int
	OnTemplate bool // on the pod template's metadata rather than the object's
}

// readIgnore reads the drainit.io/ignore annotation of obj's metadata, if any, into w.
func (r *reader) readIgnore(obj *yaml.Node, path string, onTemplate bool, w *Workload) error {
	meta, err := r.mapping(obj, "metadata", path)
	if err != nil || meta == nil {
		return err
	}
	p := join(path, "metadata")
	anns, err := r.mapping(meta, "annotations", p)
	if err != nil || anns == nil {
		return err
	}
	p = join(p, "annotations")
	v, err := r.get(anns, IgnoreAnnotation, p)
	if err != nil || v == nil {
		return err
	}
	s, err := r.str(v, join(p, IgnoreAnnotation))
	if err != nil {
		return err
	}
	w.Ignores = append(w.Ignores, Annotation{Value: s, Line: v.Line, OnTemplate: onTemplate})
	return nil
}

// ParseRuleList splits a list of rule ids as the annotation and --ignore take it: separated by
// commas, with spaces around them allowed, in any case. Empty entries are dropped; the ids are
// returned in lower case, in order, without repeats, a renamed rule's old id as its new one.
// Whether they are rules is the caller's question.
func ParseRuleList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		id := strings.ToLower(strings.TrimSpace(f))
		id = renamedRule(id)
		if id == "" || slices.Contains(out, id) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// renamedRule is a rule's new id for its old one, so that an ignore written for the old id still
// ignores it.
func renamedRule(id string) string {
	switch id {
	case "stop-signal-image-quit": // nginx and php-fpm only, until it took httpd and haproxy too
		return RuleStopSignalImage
	}
	return id
}

// UnknownRule is the error for an id that is no rule.
func UnknownRule(id string) error {
	return fmt.Errorf("unknown rule %q", id)
}
