package check

// SARIF 2.1.0 output, for GitHub code scanning and other SARIF viewers: one run, the tool's
// metadata with every rule (what it catches, the fix, its default level), one result per
// finding. A result points at the file relative to the working directory (uriBaseId
// %SRCROOT%, which code scanning resolves to the repository's checkout when drainit runs at its
// root) and the line. An ignored finding is a result with a suppression: "inSource" for the
// drainit.io/ignore annotation, "external" for --ignore. A file that could not be checked is a
// tool execution notification, and makes executionSuccessful false.
//
// From standard input there is no file to point at: a result names the path of Helm's
// "# Source:" comment when the document has one (without a line: the line is the rendered
// stream's, not the template's), else "stdin" with the stream's line; the message says which
// document it was.

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
)

// The SARIF constants drainit writes.
const (
	sarifSchema    = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	sarifVersion   = "2.1.0"
	srcRoot        = "%SRCROOT%"
	informationURI = "https://github.com/drainit/drainit"
)

// SARIFOptions says what a SARIF log needs beyond the results.
type SARIFOptions struct {
	Version string // drainit's version, for tool.driver.version
	WorkDir string // absolute: file paths are made relative to it
	// WorkDirURI overrides the file URI of WorkDir in originalUriBaseIds (tests pin it).
	WorkDirURI string
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                   `json:"tool"`
	Invocations        []sarifInvocation           `json:"invocations"`
	OriginalURIBaseIDs map[string]sarifArtifactLoc `json:"originalUriBaseIds,omitempty"`
	Results            []sarifResult               `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifMultiText `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           sarifRuleProps `json:"properties"`
}

type sarifRuleProps struct {
	Tags      []string `json:"tags"`
	Precision string   `json:"precision"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifMultiText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifResult struct {
	RuleID       string             `json:"ruleId"`
	RuleIndex    int                `json:"ruleIndex"`
	Level        string             `json:"level"`
	Message      sarifText          `json:"message"`
	Locations    []sarifLocation    `json:"locations"`
	Suppressions []sarifSuppression `json:"suppressions,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical     `json:"physicalLocation"`
	LogicalLocations []sarifLogicalLoc `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLoc `json:"artifactLocation"`
	Region           *sarifRegion     `json:"region,omitempty"`
}

type sarifArtifactLoc struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogicalLoc struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

type sarifSuppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
}

// sarifLevel is a severity as SARIF names it.
func sarifLevel(s Severity) string {
	if s == Error || s == Warning {
		return string(s)
	}
	return "note"
}

// WriteSARIF writes the results, and the files that could not be checked, as one SARIF 2.1.0
// log.
func WriteSARIF(w io.Writer, rs []Result, problems []Problem, opt SARIFOptions) error {
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{Name: "drainit", InformationURI: informationURI, Version: opt.Version,
			Rules: sarifRules()}},
		Invocations: []sarifInvocation{{ExecutionSuccessful: len(problems) == 0}},
		Results:     []sarifResult{},
	}
	if opt.WorkDir != "" {
		base := opt.WorkDirURI
		if base == "" {
			base = fileURI(opt.WorkDir)
		}
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		run.OriginalURIBaseIDs = map[string]sarifArtifactLoc{srcRoot: {URI: base}}
	}
	for _, p := range problems {
		n := sarifNotification{Level: "error", Message: sarifText{Text: p.String()}}
		if p.File != "" {
			n.Locations = []sarifLocation{{PhysicalLocation: sarifPhysical{ArtifactLocation: artifact(p.File, opt.WorkDir),
				Region: region(p.Line)}}}
		}
		run.Invocations[0].ToolExecutionNotifications = append(run.Invocations[0].ToolExecutionNotifications, n)
	}
	for _, r := range rs {
		run.Results = append(run.Results, sarifResultOf(r, opt.WorkDir))
	}
	return writeIndented(w, sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}}, "write SARIF")
}

func sarifRules() []sarifRule {
	var out []sarifRule
	for _, r := range registry {
		help := fmt.Sprintf("%s\n\nFix: %s", r.Catches, r.Fix)
		md := fmt.Sprintf("**%s** (%s)\n\n%s\n\n**Fix:** %s", markdownText(r.Short), markdownText(r.severityText()),
			markdownText(r.Catches), markdownText(r.Fix))
		out = append(out, sarifRule{
			ID:                   r.ID,
			Name:                 ruleName(r.ID),
			ShortDescription:     sarifText{Text: r.Short},
			FullDescription:      sarifText{Text: r.Catches},
			Help:                 sarifMultiText{Text: help, Markdown: md},
			DefaultConfiguration: sarifConfig{Level: sarifLevel(r.Severity)},
			Properties:           sarifRuleProps{Tags: []string{"kubernetes", "termination"}, Precision: "high"},
		})
	}
	return out
}

// ruleName is a rule id in the UpperCamelCase SARIF viewers show as the rule's name:
// shutdown-exceeds-grace → ShutdownExceedsGrace.
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func sarifResultOf(r Result, workDir string) sarifResult {
	msg := subject(r.Finding) + ": " + r.Message
	loc := sarifLocation{LogicalLocations: []sarifLogicalLoc{logical(r.Finding)}}
	switch {
	case r.Document == 0:
		loc.PhysicalLocation = sarifPhysical{ArtifactLocation: artifact(r.File, workDir), Region: region(r.Line)}
	case r.Source != "":
		msg += fmt.Sprintf(" (standard input, document %d, line %d, from %s)", r.Document, r.Line, r.Source)
		loc.PhysicalLocation = sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: relURI(r.Source)}}
	default:
		msg += fmt.Sprintf(" (standard input, document %d)", r.Document)
		loc.PhysicalLocation = sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: "stdin"}, Region: region(r.Line)}
	}
	out := sarifResult{RuleID: r.Rule, RuleIndex: ruleIndex(r.Rule), Level: sarifLevel(r.Severity), Message: sarifText{Text: msg},
		Locations: []sarifLocation{loc}}
	for _, s := range r.suppressions {
		if s.byAnnotation {
			on := "the object's"
			if s.template {
				on = "the pod template's"
			}
			out.Suppressions = append(out.Suppressions, sarifSuppression{Kind: "inSource",
				Justification: fmt.Sprintf("%s annotation on %s metadata (line %d)", IgnoreAnnotation, on, s.line)})
		} else {
			out.Suppressions = append(out.Suppressions, sarifSuppression{Kind: "external",
				Justification: "drainit check --ignore " + r.Rule})
		}
	}
	return out
}

// logical names what a finding is about: Deployment/orders, or Deployment/orders/web for a
// container.
func logical(f Finding) sarifLogicalLoc {
	fq := f.Kind + "/" + f.Name
	name := f.Name
	if f.Container != "" {
		fq += "/" + f.Container
		name = f.Container
	}
	return sarifLogicalLoc{Name: name, FullyQualifiedName: fq, Kind: "object"}
}

func region(line int) *sarifRegion {
	if line < 1 {
		return nil
	}
	return &sarifRegion{StartLine: line}
}

// artifact locates a file (its path as read, relative to the process's working directory or
// absolute): relative to workDir when it is below it, else by its absolute file URI.
func artifact(file, workDir string) sarifArtifactLoc {
	if abs, err := filepath.Abs(file); err == nil && workDir != "" {
		if rel, err := filepath.Rel(workDir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return sarifArtifactLoc{URI: relURI(filepath.ToSlash(rel)), URIBaseID: srcRoot}
		}
		return sarifArtifactLoc{URI: fileURI(abs)}
	}
	return sarifArtifactLoc{URI: relURI(filepath.ToSlash(file))}
}

// relURI escapes a slash-separated relative path as a URI reference.
func relURI(p string) string {
	return (&url.URL{Path: p}).String()
}

// fileURI is the file: URI of an absolute path, on Unix (/src/k8s) and on Windows (C:\src).
func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}
