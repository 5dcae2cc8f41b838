package tcplisten

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// littleEndian skips a test whose tables were written on a little-endian
// host (the kernel prints each address word in the host's order).
func littleEndian(t *testing.T) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the sample tables are a little-endian host's")
	}
}

const tcpTable = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1000        0 99 1 0000000000000000 20 4 30 10 -1
`

const tcp6Table = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5151 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6161 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:0051 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7171 1 0000000000000000 100 0 0 10 0
`

// TestParseTable: the tables' lines give each socket's local address and
// port, its state and its inode, for IPv4 and IPv6 (an IPv4-mapped one
// included).
func TestParseTable(t *testing.T) {
	littleEndian(t)
	for name, tc := range map[string]struct {
		table string
		want  []Socket
	}{
		"tcp": {tcpTable, []Socket{
			{Local: netip.MustParseAddrPort("127.0.0.1:8080"), State: 0x0A, Inode: 4242},
			{Local: netip.MustParseAddrPort("0.0.0.0:22"), State: 0x0A, Inode: 17},
			{Local: netip.MustParseAddrPort("127.0.0.1:8080"), State: 0x01, Inode: 99},
		}},
		"tcp6": {tcp6Table, []Socket{
			{Local: netip.MustParseAddrPort("[::1]:8080"), State: 0x0A, Inode: 5151},
			{Local: netip.MustParseAddrPort("[::]:80"), State: 0x0A, Inode: 6161},
			{Local: netip.MustParseAddrPort("[::ffff:127.0.0.1]:81"), State: 0x0A, Inode: 7171},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseTable(strings.NewReader(tc.table))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ParseTable = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("socket %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestParseTableRefusesGarbage: a line the kernel would not write is an
// error, not a socket.
func TestParseTableRefusesGarbage(t *testing.T) {
	header := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for name, line := range map[string]string{
		"short":   "0: 0100007F:1F90 00000000:0000 0A",
		"no port": "0: 0100007F 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1 1",
		"address": "0: 01007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1 1",
		"state":   "0: 0100007F:1F90 00000000:0000 ZZ 00000000:00000000 00:00000000 00000000 0 0 1 1",
		"inode":   "0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 x 1",
	} {
		if got, err := ParseTable(strings.NewReader(header + line + "\n")); err == nil {
			t.Errorf("%s: ParseTable = %v, want an error", name, got)
		}
	}
}

// TestReach: only the any address and the loopback one of each family are
// reached by a connection to the loopback.
func TestReach(t *testing.T) {
	for addr, want := range map[string]Reach{
		"0.0.0.0":          {IPv4: true},
		"127.0.0.1":        {IPv4: true},
		"127.0.0.2":        {},
		"10.0.0.5":         {},
		"::":               {IPv6: true},
		"::1":              {IPv6: true},
		"::ffff:127.0.0.1": {IPv4: true},
		"fe80::1":          {},
	} {
		if got := reach(netip.MustParseAddr(addr)); got != want {
			t.Errorf("reach(%s) = %+v, want %+v", addr, got, want)
		}
	}
}

func listen(t *testing.T, addr string) (net.Listener, uint16) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return l, uint16(l.Addr().(*net.TCPAddr).Port)
}

func find(t *testing.T, pids []int, port uint16) Reach {
	t.Helper()
	r, err := Find("/proc", pids, port)
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	return r
}

// TestFindOwnListeners: the test process's own listeners are found by its
// pid, on IPv4 and on IPv6, and not by another process's; a port it only
// has an established connection on, or whose listener it closed, is not.
func TestFindOwnListeners(t *testing.T) {
	self := []int{os.Getpid()}
	_, p4 := listen(t, "127.0.0.1:0")
	if got := find(t, self, p4); got != (Reach{IPv4: true}) || got.Hosts()[0] != "127.0.0.1" {
		t.Errorf("Find(self, %d) = %+v, want IPv4", p4, got)
	}
	_, p6 := listen(t, "[::1]:0")
	if got := find(t, self, p6); got != (Reach{IPv6: true}) {
		t.Errorf("Find(self, %d) = %+v, want IPv6", p6, got)
	}
	_, pAny := listen(t, ":0")
	if got := find(t, self, pAny); !got.Any() {
		t.Errorf("Find(self, %d) on the any address = %+v, want reached", pAny, got)
	}

	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if got := find(t, []int{other.Process.Pid}, p4); got.Any() {
		t.Errorf("Find(another process, %d) = %+v, want none", p4, got)
	}

	l, p := listen(t, "127.0.0.1:0")
	client, err := net.DialTimeout("tcp", l.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	l.Close()
	if got := find(t, self, p); got.Any() {
		t.Errorf("Find(self, %d) with only an established connection = %+v, want none", p, got)
	}
}

// TestFindSkipsExited: a process that is gone has no sockets, and is not
// an error.
func TestFindSkipsExited(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := find(t, []int{cmd.Process.Pid}, 80); got.Any() {
		t.Errorf("Find(exited) = %+v", got)
	}
}
