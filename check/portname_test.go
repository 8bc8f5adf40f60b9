package check

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzPortName: a port name is refused by Read exactly when the API server's own validation
// (apimachinery's IsValidPortName, applied to every httpGet's port) refuses it.
func FuzzPortName(f *testing.F) {
	for _, s := range []string{"http", "8099", "HTTP", "a-b", "a--b", "-a", "a-", "", "abcdefghijklmnop", "abcdefghijklmno",
		"1-2", "1a", "-", "h\u00e9", "h_t", "0x1f90"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ours, api := portNameProblem(s), validation.IsValidPortName(s)
		if (ours == "") != (len(api) == 0) {
			t.Fatalf("%q: Read says %q, the API server %q", s, ours, api)
		}
	})
}
