package main

import (
	"os"
	"strconv"
	"time"
)

// eaten is what eatMemory keeps.
var eaten [][]byte

// eatMemory allocates memory a MiB at a time, touching every page, and keeps it, until the
// kernel's OOM killer ends it at the container's memory limit; it starts after the duration
// args[0] (none: at once), and prints "ate N MiB" every 16 MiB.
func eatMemory(args []string) error {
	say("ready app %d", os.Getpid())
	if d, err := time.ParseDuration(arg(args, 0)); err == nil {
		time.Sleep(d)
	}
	for n := 1; ; n++ {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		eaten = append(eaten, b)
		if n%16 == 0 {
			say("ate %s MiB", strconv.Itoa(n))
			time.Sleep(time.Millisecond) // the log's reader gets to keep up
		}
	}
}
