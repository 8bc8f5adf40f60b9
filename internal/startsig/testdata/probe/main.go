// Command probe prints what startsig saw at the entry point, and its arguments and an
// environment variable, which the entry point must have left where the runtime finds them.
package main

import (
	"fmt"
	"os"

	"github.com/drainit/drainit/internal/startsig"
)

func main() {
	mask, ok := startsig.Ignored()
	fmt.Printf("ran=%v ignored=%016x args=%q env=%q\n", ok, mask, os.Args[1:], os.Getenv("STARTSIG_PROBE"))
}
