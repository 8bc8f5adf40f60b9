package check

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the reader and the rules. Nothing may panic; what cannot be
// read is a *ReadError on one line naming the file; what can is checked and printed without
// error. Seeds live in testdata/fuzz/FuzzRead/ (manifests for every rule, YAML oddities:
// anchors, merge keys, circular aliases, Lists, documents of every shape).
func FuzzRead(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := Read("fuzz.yaml", data)
		if err != nil {
			var re *ReadError
			if !errors.As(err, &re) || re.File != "fuzz.yaml" {
				t.Fatalf("error is not a ReadError naming the file: %#v", err)
			}
			if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n") {
				t.Fatalf("error is not one line: %q", msg)
			}
			if ws != nil {
				t.Fatalf("workloads returned with an error")
			}
			return
		}
		fs := Check(ws)
		for _, x := range fs {
			if x.File != "fuzz.yaml" || x.Line < 1 || x.Rule == "" || x.Message == "" {
				t.Fatalf("incomplete finding: %+v", x)
			}
		}
		var out bytes.Buffer
		if err := WriteText(&out, fs); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&out, NewReport(ws, fs)); err != nil {
			t.Fatal(err)
		}
	})
}
