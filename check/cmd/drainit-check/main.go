// Command drainit-check checks the termination timing of Kubernetes manifests: `drainit check`
// runs it. See the README's "drainit check", or `drainit-check --help`.
//
// It is a binary of its own so that drainit, which starts every container it runs in, links
// none of it: Go initialises every package a binary links before main, and the YAML parser, the
// regular expressions and the Unicode tables they bring cost drainit's start ~0.3 ms and its
// memory ~0.8 MiB of mapped pages (bench/STARTUP.md).
package main

import (
	"fmt"
	"os"

	"github.com/drainit/drainit/internal/buildinfo"
)

// version, commit and date are stamped with -ldflags "-X main.version=…" as drainit's are
// (buildinfo.Read).
var (
	version = buildinfo.Unstamped
	commit  string
	date    string
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(buildinfo.Read(version, commit, date).Line("drainit-check"))
		return
	}
	os.Exit(checkCmd(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
