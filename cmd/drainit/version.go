package main

import (
	"fmt"
	"io"

	"github.com/drainit/drainit/internal/buildinfo"
)

// commit and date are stamped with -ldflags "-X main.commit=… -X main.date=…": see
// buildinfo.Read.
var (
	commit string
	date   string
)

func versionCmd(w io.Writer) int {
	fmt.Fprintln(w, buildinfo.Read(version, commit, date))
	return 0
}
