package release

import (
	"errors"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// need returns the release to check, or ends the test: a skip when `make release` has not run
// (a failure under CI=true, where make test runs it first), a failure when dist/ is broken.
func need(t *testing.T) *Dist {
	t.Helper()
	d, err := Find()
	if errors.Is(err, ErrNoDist) {
		testenv.SkipUnlessCI(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}
