//go:build !linux

package main

import "errors"

func run(options) error {
	return errors.New("the benchmark needs Linux: PID namespaces, /proc, signalfd")
}
