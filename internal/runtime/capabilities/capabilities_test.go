package capabilities

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The names are the kernel's numbers, as its headers give them.
func TestNumbers(t *testing.T) {
	for name, want := range map[string]int{
		"CAP_CHOWN": unix.CAP_CHOWN, "CAP_NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE,
		"CAP_SYS_ADMIN": unix.CAP_SYS_ADMIN, "CAP_AUDIT_WRITE": unix.CAP_AUDIT_WRITE,
		"CAP_BPF": unix.CAP_BPF, "CAP_CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
	} {
		if got, ok := Number(name); !ok || got != want {
			t.Errorf("Number(%s) = %d, %v; want %d", name, got, ok, want)
		}
	}
	if _, ok := Number("CAP_MAKE_COFFEE"); ok {
		t.Error("an unknown name has a number")
	}
	if n := len(All()); n != unix.CAP_LAST_CAP+1 {
		t.Errorf("%d capabilities, want %d", n, unix.CAP_LAST_CAP+1)
	}
}
