package cluster

import (
	"os"
	"testing"

	"github.com/drainit/drainit/integration/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup() // the binaries Build put in a temporary directory
	os.Exit(code)
}
