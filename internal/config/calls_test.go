package config

import (
	"strings"
	"testing"
)

// A space in a URL's query would end the request line early (url.Parse keeps a query as
// written), and the server would answer 400: refused when the URL is read. A space in the path
// is escaped, as the request line needs.
func TestCheckURLSpaces(t *testing.T) {
	if _, err := CheckURL("http://127.0.0.1:1/?x=a b"); err == nil || !strings.Contains(err.Error(), "space in the URL's query") {
		t.Errorf("a space in the query: %v, want it refused", err)
	}
	u, err := CheckURL("http://127.0.0.1:1/a b?x=a%20b+c")
	if err != nil {
		t.Fatal(err)
	}
	if got := u.RequestURI(); strings.Contains(got, " ") {
		t.Errorf("request target %q has a space", got)
	}
}
