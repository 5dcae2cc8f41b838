//go:build linux

package seccomp

import "testing"

// What the init helper pays to compile the filter itself from the
// capability list, against decoding one compiled by the runtime.
func BenchmarkRuntimeDefault(b *testing.B) {
	caps := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
		"CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RuntimeDefault(caps); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalBinary(b *testing.B) {
	f, err := RuntimeDefault(nil)
	if err != nil {
		b.Fatal(err)
	}
	enc, err := f.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var g Filter
		if err := g.UnmarshalBinary(enc); err != nil {
			b.Fatal(err)
		}
	}
}
