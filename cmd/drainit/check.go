package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/drainit/drainit/internal/check"
)

const checkUsage = `Usage: drainit check [--format text|json] FILE...
       kubectl get deploy -o yaml | drainit check -

Checks the termination timing of the pod templates in Kubernetes manifests (Pod, Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, and List objects of them; several documents per
file): preStop against terminationGracePeriodSeconds, the app's shutdown time, drainit's own
settings and control server. With no FILE, or FILE "-", reads standard input.

Exit status: 0 no error-level finding, 1 at least one, 2 unreadable or malformed input.

Options:
  --format text|json   one finding per line (default), or one JSON report
`

// checkCmd is `drainit check`: it reads every file first (exit 2 on the first that cannot be
// read or parsed, naming it), then writes the findings to stdout and a one-line summary to
// stderr. It returns the exit status.
func checkCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	format, files, err := parseCheckArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, checkUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "drainit check: %v (drainit check --help)\n", err)
		return 2
	}
	var ws []check.Workload
	for _, name := range files {
		got, err := readInput(name, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "drainit check: %v\n", err)
			return 2
		}
		ws = append(ws, got...)
	}
	findings := check.Check(ws)
	if format == "json" {
		err = check.WriteJSON(stdout, check.NewReport(ws, findings))
	} else {
		err = check.WriteText(stdout, findings)
	}
	if err != nil {
		fmt.Fprintf(stderr, "drainit check: %v\n", err)
		return 2
	}
	n := check.Count(findings)
	containers := 0
	for _, w := range ws {
		containers += len(w.Containers)
	}
	if len(ws) == 0 {
		fmt.Fprintln(stderr, "drainit check: no pod templates found (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob)")
	} else if format != "json" {
		fmt.Fprintf(stderr, "drainit check: %s in %s: %s, %s, %s\n", plural(containers, "container"), plural(len(ws), "pod template"),
			plural(n.Errors, "error"), plural(n.Warnings, "warning"), plural(n.Infos, "info"))
	}
	if n.Errors > 0 {
		return 1
	}
	return 0
}

// parseCheckArgs reads the options, which may come before, between or after the files.
func parseCheckArgs(args []string) (format string, files []string, err error) {
	fset := flag.NewFlagSet("drainit check", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	fset.StringVar(&format, "format", "text", "text or json")
	for {
		if err := fset.Parse(args); err != nil {
			return "", nil, err
		}
		rest := fset.Args()
		if len(rest) == 0 {
			break
		}
		// A lone "-" is a file (stdin), and "--" ended the options: everything after is a file.
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			files = append(files, rest...)
			break
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
	if format != "text" && format != "json" {
		return "", nil, fmt.Errorf("--format %q: must be text or json", format)
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	return format, files, nil
}

// readInput reads the workloads of a file, or of stdin for "-", streaming: a List as big as a
// cluster is never held whole (check.Read).
func readInput(name string, stdin io.Reader) ([]check.Workload, error) {
	if name == "-" {
		return check.Read("<stdin>", stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in the message
		}
		return nil, fmt.Errorf("%s: cannot read: %w", name, err)
	}
	defer f.Close()
	return check.Read(name, f)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
