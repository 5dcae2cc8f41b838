package archtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// walkGoFiles calls each with the path of every Go file under root's
// folders tops (a missing one is skipped), testdata and hidden folders left
// out, and with the file's package directory relative to root (slashes).
// An error of each ends the walk and fails the test.
func walkGoFiles(t *testing.T, root string, tops []string, each func(path, pkgDir string) error) {
	t.Helper()
	for _, top := range tops {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			return each(path, filepath.ToSlash(rel))
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatalf("read %s: %v", top, err)
		}
	}
}
