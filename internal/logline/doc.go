// Package logline is what makes drainit's log lines safe to write: text from anywhere escaped
// into one line (Escape, EscapeJSON), a JSON line cut to one pipe write (Cut), a line that can
// recur spaced out (Limiter), and every line written to stderr without waiting for its reader
// (Writer).
package logline
