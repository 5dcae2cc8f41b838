package node

import (
	"reflect"
	"strings"
	"testing"
)

// TestCleanReadOnlyMappings: only the executable's mappings that cannot be
// written and hold no private page are dropped — never its data, nor a
// read-only mapping a loader wrote to before protecting it (RELRO), whose
// pages would come back as the file's unrelocated bytes.
func TestCleanReadOnlyMappings(t *testing.T) {
	const exe = "/usr/bin/podward"
	smaps := strings.Join([]string{
		"00400000-01fa5000 r-xp 00000000 08:01 42 " + exe, // text
		"Rss:               15316 kB",
		"Anonymous:             0 kB",
		"01fa5000-041ae000 r--p 01ba5000 08:01 42 " + exe, // rodata, pclntab
		"Anonymous:             0 kB",
		"041ae000-041b0000 r--p 03dae000 08:01 42 " + exe, // relocated, then protected
		"Anonymous:             8 kB",
		"041b0000-04259000 rw-p 03db0000 08:01 42 " + exe, // data
		"Anonymous:             0 kB",
		"7fd3d9e3a000-7fd3d9f90000 r-xp 00028000 08:01 7 /usr/lib/x86_64-linux-gnu/libc.so.6",
		"Anonymous:             0 kB",
		"3dac44800000-3dac45000000 rw-p 00000000 00:00 0 ",
		"Anonymous:          3808 kB",
		"",
	}, "\n")
	got, err := cleanReadOnlyMappings(strings.NewReader(smaps), exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{{0x400000, 0x1fa5000}, {0x1fa5000, 0x41ae000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cleanReadOnlyMappings = %x, want %x", got, want)
	}
}
