// Package release reads what `make release` leaves in dist/ (GoReleaser's snapshot of every
// release artifact, and the image archive), for the tests that check it: this package's and the
// podman test that builds a user's image with `COPY --from` the released one.
package release

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drainit/drainit/integration/testenv"
)

// Dist is one `make release` output directory.
type Dist struct {
	// Dir is the directory: $DRAINIT_DIST, else dist/ at the module's root.
	Dir string
	// Meta is what GoReleaser says it built (dist/metadata.json).
	Meta Metadata
	// Sums maps each file checksums.txt lists to its sha256, in hex.
	Sums Checksums
}

// Metadata is the part of GoReleaser's metadata.json the tests use.
type Metadata struct {
	Version string `json:"version"` // e.g. 0.1.0-snapshot.7a351d4, without the v
	Commit  string `json:"commit"`  // the full commit hash
	Tag     string `json:"tag"`
}

// Checksums are the lines of checksums.txt: file name to sha256.
type Checksums map[string]string

// Has reports whether name has a line.
func (c Checksums) Has(name string) bool { _, ok := c[name]; return ok }

// ErrNoDist is returned by Find when there is no release to check: `make release` has not run.
var ErrNoDist = errors.New("no dist/metadata.json: run `make release` first (make test does)")

// Find opens the release directory. It returns ErrNoDist (wrapped) when there is none, and any
// other error when one is there but unreadable or incomplete.
func Find() (*Dist, error) {
	dir := cmp.Or(os.Getenv("DRAINIT_DIST"), filepath.Join(testenv.ModuleRoot(), "dist"))
	b, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoDist)
	}
	if err != nil {
		return nil, err
	}
	d := &Dist{Dir: dir, Sums: Checksums{}}
	if err := json.Unmarshal(b, &d.Meta); err != nil {
		return nil, fmt.Errorf("%s/metadata.json: %w", dir, err)
	}
	if d.Meta.Version == "" || d.Meta.Commit == "" {
		return nil, fmt.Errorf("%s/metadata.json names no version or commit: %s", dir, b)
	}
	f, err := os.Open(filepath.Join(dir, "checksums.txt"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("checksums.txt: not a sha256sum line: %q", sc.Text())
		}
		d.Sums[name] = sum
	}
	return d, sc.Err()
}

// Image is the path of the multi-arch OCI image archive.
func (d *Dist) Image() string {
	return filepath.Join(d.Dir, "drainit_"+d.Meta.Version+"_image.oci.tar")
}

// ImageRef is the name the image archive holds, and so the name `podman load` gives it.
func (d *Dist) ImageRef() string {
	return "localhost/drainit:" + strings.ReplaceAll(d.Meta.Version, "+", "-")
}
