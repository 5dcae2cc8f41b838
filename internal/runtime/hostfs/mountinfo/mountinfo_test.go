package mountinfo

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestPoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	data := "22 1 0:21 / / rw - ext4 /dev/sda rw\n" +
		"23 22 0:22 / /a\\040b rw - tmpfs tmpfs rw\n" +
		"short line\n" +
		"24 22 0:23 / /c\\134d rw - tmpfs tmpfs rw\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Points(path)
	if want := []string{"/", "/a b", `/c\d`}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Points = %q, %v; want %q", got, err, want)
	}
	if _, err := Points(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing file read")
	}
}
