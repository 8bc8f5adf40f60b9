package main

import (
	"fmt"
	"io"
	"runtime"
)

func versionCmd(w io.Writer) int {
	fmt.Fprintf(w, "drainit %s %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
