//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// On a terminal with no log level chosen, the lines of a run where nothing goes wrong are held
// back; warnings pass; from a stop sequence's first event on, every line passes.
func TestQuietWriter(t *testing.T) {
	var out bytes.Buffer
	log := zerolog.New(&quietWriter{out: &out})
	log.Info().Msg("app started")
	log.Debug().Msg("reaped orphan")
	log.Warn().Msg("the app never became ready")
	log.Info().Str("phase", "running").Int("status", 0).Msg("app exited")
	if got := out.String(); strings.Contains(got, "app started") || strings.Contains(got, "app exited") ||
		strings.Contains(got, "reaped orphan") || !strings.Contains(got, "never became ready") {
		t.Fatalf("before a stop sequence the terminal shows:\n%s", got)
	}
	out.Reset()
	log.Info().Str("phase", "running").Dur("elapsed", 0).Msg("stop sequence started")
	log.Info().Str("hook", "x").Msg("hook done") // no elapsed, but within the stop sequence
	log.Info().Str("summary", "…").Msg("drainit exiting")
	for _, want := range []string{"stop sequence started", "hook done", "drainit exiting"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("during the stop sequence the terminal does not show %q:\n%s", want, out.String())
		}
	}
	// A message that merely mentions the key opens nothing.
	out.Reset()
	log = zerolog.New(&quietWriter{out: &out})
	log.Info().Msg(`"elapsed": 3`)
	if out.Len() != 0 {
		t.Errorf("a message quoting \"elapsed\" opened the gate: %s", out.String())
	}
}
