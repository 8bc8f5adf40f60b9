package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the reader and the rules. Nothing may panic; what cannot be
// read is a *ReadError on one line naming the file; what can is checked and printed without
// error; and the streaming Read agrees with the whole-document reader. Seeds live in testdata/fuzz/FuzzRead/ (manifests for every rule, YAML oddities:
// anchors, merge keys, circular aliases, Lists, documents of every shape).
func FuzzRead(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := Read("fuzz.yaml", bytes.NewReader(data))
		// Read cuts the input into pieces; readWhole decodes each document at once and is the
		// reference. They must agree on everything, errors included, from a file and a pipe.
		wantWs, wantErr := readWhole("fuzz.yaml", bytes.NewReader(data))
		pipeWs, pipeErr := Read("fuzz.yaml", struct{ io.Reader }{bytes.NewReader(data)})
		if !sameRead(ws, err, wantWs, wantErr) {
			t.Fatalf("streaming and whole-document reading differ:\n%v\n%+v\nwant\n%v\n%+v", err, ws, wantErr, wantWs)
		}
		if !sameRead(pipeWs, pipeErr, wantWs, wantErr) {
			t.Fatalf("reading from a pipe differs:\n%v\n%+v\nwant\n%v\n%+v", pipeErr, pipeWs, wantErr, wantWs)
		}
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

// sameRead says whether Read's result is readWhole's. One difference is allowed: readWhole
// parses a little past the end of a document before it looks at it (the YAML parser reads
// ahead), so when a document is wrong and the text right after it is not YAML, readWhole may
// report the text and Read, which looks at each document as it ends, the document, earlier.
func sameRead(ws []Workload, err error, wantWs []Workload, wantErr error) bool {
	if fmt.Sprint(err) == fmt.Sprint(wantErr) && reflect.DeepEqual(ws, wantWs) {
		return true
	}
	var got, want *ReadError
	if !errors.As(err, &got) || !errors.As(wantErr, &want) || ws != nil {
		return false
	}
	const syntax = "not valid YAML: "
	return strings.HasPrefix(want.Msg, syntax) && !strings.HasPrefix(got.Msg, syntax) &&
		(want.Line == 0 || got.Line <= want.Line)
}
