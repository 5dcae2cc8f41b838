package tcplisten

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
)

// Reach is which loopback addresses reach a listening socket: a
// connection to 127.0.0.1 (IPv4) or to ::1 (IPv6).
type Reach struct {
	IPv4, IPv6 bool
}

// Any says whether some loopback address reaches the socket.
func (r Reach) Any() bool { return r.IPv4 || r.IPv6 }

// Hosts are the loopback addresses to dial, IPv4 first.
func (r Reach) Hosts() []string {
	var hosts []string
	if r.IPv4 {
		hosts = append(hosts, "127.0.0.1")
	}
	if r.IPv6 {
		hosts = append(hosts, "::1")
	}
	return hosts
}

// reach is which loopback addresses reach a socket listening on local: the
// any address or the loopback one of its family (an IPv4-mapped IPv6
// address is IPv4's).
func reach(local netip.Addr) Reach {
	if local.Is4In6() {
		local = local.Unmap()
	}
	ok := local.IsUnspecified() || local == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || local == netip.IPv6Loopback()
	if !ok {
		return Reach{}
	}
	if local.Is4() {
		return Reach{IPv4: true}
	}
	return Reach{IPv6: true}
}

// Find says which loopback addresses reach a TCP socket listening on port
// that one of pids owns (has open), in the processes' own network
// namespaces; procRoot is "/proc" on the host. A socket on another
// address (10.0.0.5, 127.0.0.2) is not reached by a connection to the
// loopback and does not count. Processes that exited meanwhile are
// skipped; a process whose descriptors cannot be read is an error.
func Find(procRoot string, pids []int, port uint16) (Reach, error) {
	var r Reach
	tables := make(map[string][]Socket) // by network namespace
	for _, pid := range pids {
		inodes, err := SocketInodes(procRoot, pid)
		if err != nil {
			return Reach{}, err
		}
		if len(inodes) == 0 {
			continue
		}
		socks, err := tablesOf(procRoot, pid, tables)
		if err != nil {
			return Reach{}, err
		}
		for _, s := range socks {
			if s.Listening() && s.Local.Port() == port && inodes[s.Inode] {
				got := reach(s.Local.Addr())
				r.IPv4, r.IPv6 = r.IPv4 || got.IPv4, r.IPv6 || got.IPv6
			}
		}
	}
	return r, nil
}

// tablesOf returns the TCP sockets of pid's network namespace (its tcp and
// tcp6 tables), read once per namespace into cache.
func tablesOf(procRoot string, pid int, cache map[string][]Socket) ([]Socket, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	ns, err := os.Readlink(filepath.Join(dir, "ns", "net"))
	if err == nil {
		if socks, ok := cache[ns]; ok {
			return socks, nil
		}
	}
	var all []Socket
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(dir, "net", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // no IPv6, or the process exited
		}
		if err != nil {
			return nil, fmt.Errorf("open the TCP table of process %d: %w", pid, err)
		}
		socks, err := ParseTable(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("the TCP table %s of process %d: %w", name, pid, err)
		}
		all = append(all, socks...)
	}
	if ns != "" {
		cache[ns] = all
	}
	return all, nil
}
