package startsig

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Makefile and .goreleaser.yaml are the two places that link the entry point: each must
// pass EntryFlag, the Makefile for exactly the architectures the assembly is written for, and
// the release only for those (another would fail to link: "missing entry symbol").
func TestEntryFlagWhereLinked(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	files, err := filepath.Glob("entry_linux_*.s")
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, f := range files {
		written = append(written, strings.TrimSuffix(strings.TrimPrefix(f, "entry_linux_"), ".s"))
	}
	slices.Sort(written)

	makefile := read("Makefile")
	if !strings.Contains(makefile, EntryFlag+")") {
		t.Errorf("the Makefile's ENTRY does not pass %s", EntryFlag)
	}
	m := regexp.MustCompile(`(?m)^ENTRY_ARCHS\s*:=(.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no ENTRY_ARCHS")
	}
	var archs []string
	for _, p := range strings.Fields(m[1]) {
		archs = append(archs, strings.TrimPrefix(p, "linux/"))
	}
	slices.Sort(archs)
	if !slices.Equal(archs, written) {
		t.Errorf("the Makefile links the entry point for %v; it is written for %v", archs, written)
	}

	release := read(".goreleaser.yaml")
	if !strings.Contains(release, `{{ if eq .Os "linux" }}`+EntryFlag+"{{ end }}") {
		t.Errorf(".goreleaser.yaml does not pass %s for Linux", EntryFlag)
	}
	for _, target := range regexp.MustCompile(`(?m)^\s*- linux_([a-z0-9]+)`).FindAllStringSubmatch(release, -1) {
		if !slices.Contains(written, target[1]) {
			t.Errorf(".goreleaser.yaml builds for linux/%s, for which the entry point is not written", target[1])
		}
	}
}
