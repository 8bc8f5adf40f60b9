package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/drainit/drainit/check"
	"github.com/drainit/drainit/internal/buildinfo"
	"github.com/drainit/drainit/internal/config"
)

const checkUsage = `Usage: drainit check [OPTIONS] [PATH...]
       helm template CHART | drainit check -
       kubectl kustomize DIR | drainit check -
       drainit-check [OPTIONS] [PATH...]   (the same: drainit check runs drainit-check)

Checks the termination timing of the pod templates in Kubernetes manifests (Pod, Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Argo Rollout, and List objects of them; several
documents per file): preStop against terminationGracePeriodSeconds, the app's shutdown time, drainit's own
settings and control server.

PATH is a file; a directory, searched recursively for *.yaml, *.yml and *.json (hidden files and
directories skipped, files that are not Kubernetes manifests skipped quietly, a Helm chart's
templates/ and the patches a kustomization names left out with a note); a pattern, expanded by
drainit, quoted so that the shell leaves it alone ('k8s/**/*.yaml': ** matches any number of
directories); or "-" for standard input, the default. From standard input, findings also name
the document and Helm's "# Source:" path.

Exit status: 0 no finding at or above the severity threshold, 1 at least one, 2 unreadable or
malformed input. A file named on the command line that cannot be read or parsed stops the check
at once; one found in a directory or by a pattern is reported, the other files are still
checked, and the exit status is 2. An input (a file, or standard input) over 64 MiB is not read:
it counts as one that cannot be read.

Options:
  --format text|json|sarif|junit  one finding per line and a summary on stderr (default); one
                                  JSON report; SARIF 2.1.0 (GitHub code scanning); JUnit XML
  --exclude PATTERN               leave out the files a directory or a pattern finds whose path
                                  (as findings show it) matches ('vendor/**', '**/*.tmpl.yaml');
                                  repeatable; a file named on the command line is always read
  --lenient                       read the files named on the command line as a directory walk
                                  reads what it finds: skip what is not a manifest, report a
                                  malformed one and go on (for pre-commit, which names every
                                  staged YAML file)
  --ignore RULE[,RULE...]         ignore these rules' findings (repeatable); an ignored finding
                                  is counted, and kept in the json, sarif and junit output
  --severity-threshold LEVEL      error (default), warning or info: the least severity that
                                  makes the exit status 1

To ignore rules for one object, annotate it or its pod template:
  metadata:
    annotations:
      drainit.io/ignore: "no-drain,spring-duration"

Rules:
`

// checkOptions are `drainit check`'s options.
type checkOptions struct {
	format    string
	exclude   []string
	lenient   bool
	ignore    []string
	threshold check.Severity
	paths     []string
}

// checkCmd is `drainit check`: it reads the inputs (exit 2 at once for a named one that cannot
// be read or parsed, naming it), writes the results to stdout in the chosen format, the notes
// and the found files that could not be checked to stderr, and for the text format a one-line
// summary to stderr. It returns the exit status.
func checkCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opt, err := parseCheckArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, checkUsage+check.RulesHelp())
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "drainit check: %v (drainit check --help)\n", err)
		return 2
	}
	in, err := check.ReadInputs(opt.paths, stdin, check.ReadOptions{Exclude: opt.exclude, Lenient: opt.lenient,
		Ignore: opt.ignore, Templates: opt.format == "junit"})
	if err != nil {
		fmt.Fprintf(stderr, "drainit check: %v\n", err)
		// The report still says why: a CI step that uploads it (SARIF to code scanning, JUnit
		// to a test view) would otherwise fail on an empty file and hide the reason.
		if opt.format != "text" {
			_ = writeReport(stdout, opt, &check.Inputs{Problems: []check.Problem{check.ProblemOf(err)}}, nil)
		}
		return 2
	}
	for _, n := range in.Notes {
		fmt.Fprintf(stderr, "drainit check: %s\n", n)
	}
	for _, p := range in.Problems {
		fmt.Fprintf(stderr, "drainit check: %s\n", p)
	}
	rs := in.Results
	if err := writeReport(stdout, opt, in, rs); err != nil {
		fmt.Fprintf(stderr, "drainit check: %v\n", err)
		return 2
	}
	if in.Workloads == 0 {
		fmt.Fprintln(stderr, "drainit check: no pod templates found (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Argo Rollout)")
	} else if opt.format == "text" {
		fmt.Fprintln(stderr, "drainit check: "+summary(in, rs))
	}
	switch {
	case len(in.Problems) > 0:
		return 2
	case check.Failing(rs, opt.threshold) > 0:
		return 1
	}
	return 0
}

// writeReport writes the results, and the inputs' problems, in the chosen format.
func writeReport(w io.Writer, opt checkOptions, in *check.Inputs, rs []check.Result) error {
	switch opt.format {
	case "json":
		return check.WriteJSON(w, check.BuildReport(in))
	case "sarif":
		wd, _ := os.Getwd()
		v := buildinfo.Read(version, commit, date).Version() // as `drainit version` reports it
		return check.WriteSARIF(w, rs, in.Problems, check.SARIFOptions{Version: v, WorkDir: wd})
	case "junit":
		return check.WriteJUnit(w, in.Templates, rs, in.Problems, opt.threshold)
	}
	return check.WriteTextResults(w, rs)
}

// summary is the text format's last line: what was checked and what was found.
func summary(in *check.Inputs, rs []check.Result) string {
	n := check.CountResults(rs)
	s := fmt.Sprintf("%s in %s (%s): %s, %s, %s", plural(in.Containers, "container"), plural(in.Workloads, "pod template"),
		plural(len(in.Paths), "file"), plural(n.Errors, "error"), plural(n.Warnings, "warning"), plural(n.Infos, "info"))
	if n.Ignored > 0 {
		s += fmt.Sprintf(", %d ignored", n.Ignored)
	}
	if len(in.Problems) > 0 {
		s += fmt.Sprintf("; %s could not be checked", plural(len(in.Problems), "file"))
	}
	return s
}

// parseCheckArgs reads the options, which may come before, between or after the paths.
func parseCheckArgs(args []string) (checkOptions, error) {
	opt := checkOptions{format: "text", threshold: check.Error}
	fset := flag.NewFlagSet("drainit check", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	fset.StringVar(&opt.format, "format", "text", "text, json, sarif or junit")
	fset.Func("exclude", "paths a walk or a pattern does not take; repeatable", func(v string) error {
		opt.exclude = append(opt.exclude, v)
		return nil
	})
	fset.BoolVar(&opt.lenient, "lenient", false, "read named files as a walk reads found ones")
	var optErr error // an option's own message, clearer than the flag package's wrapping of it
	fset.Func("ignore", "rules to ignore, comma-separated; repeatable", func(v string) error {
		ids := check.ParseRuleList(v)
		if len(ids) == 0 {
			optErr = fmt.Errorf("--ignore %q: names no rule", v)
			return optErr
		}
		for _, id := range ids {
			if _, ok := check.LookupRule(id); !ok {
				optErr = fmt.Errorf("--ignore %q: %w", v, check.UnknownRule(id))
				return optErr
			}
			opt.ignore = append(opt.ignore, id)
		}
		return nil
	})
	fset.Func("severity-threshold", "error, warning or info", func(v string) error {
		sev, err := check.ParseSeverity(v)
		if err != nil {
			optErr = fmt.Errorf("--severity-threshold %w", err)
			return optErr
		}
		opt.threshold = sev
		return nil
	})
	help := config.HelpFlag(fset)
	for {
		if err := fset.Parse(args); err != nil {
			if optErr != nil {
				return opt, optErr
			}
			var names []string
			fset.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			return opt, config.FlagError(err, names, "") // the caller adds (drainit check --help)
		}
		rest := fset.Args()
		if len(rest) == 0 {
			break
		}
		// A lone "-" is a path (stdin), and "--" ended the options: everything after is a path.
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			opt.paths = append(opt.paths, rest...)
			break
		}
		opt.paths = append(opt.paths, rest[0])
		args = rest[1:]
	}
	if *help {
		return opt, flag.ErrHelp
	}
	switch opt.format {
	case "text", "json", "sarif", "junit":
	default:
		return opt, fmt.Errorf("--format %q: must be text, json, sarif or junit", opt.format)
	}
	return opt, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
