// Package tcplisten finds the TCP sockets a set of processes listens on,
// from /proc: which of a pod's processes own a listening socket on a port,
// so that the process runtime forwards a port only to a socket of the
// pod's own (Find). It reads, for each process, the socket inodes of its
// open descriptors (/proc/<pid>/fd, "socket:[INODE]") and matches them
// against the LISTEN entries of its network namespace's tables
// (/proc/<pid>/net/tcp and tcp6).
//
// It imports nothing of podward: it is a leaf of the process runtime.
package tcplisten

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// stateListen is TCP_LISTEN, the st column of /proc/net/tcp
// (include/net/tcp_states.h).
const stateListen = 0x0A

// Socket is one entry of /proc/net/tcp or tcp6.
type Socket struct {
	// Local is the socket's local address and port.
	Local netip.AddrPort
	// State is the kernel's TCP state (0x0A: listening).
	State uint8
	// Inode is the socket's inode, as /proc/<pid>/fd links name it.
	Inode uint64
}

// Listening says whether s is a listening socket.
func (s Socket) Listening() bool { return s.State == stateListen }

// ParseTable parses a /proc/net/tcp or /proc/net/tcp6 table: a header
// line, then one socket a line. The addresses are in the kernel's
// notation: each 32-bit word of the address in hex, in the host's byte
// order, then the port in hex.
func ParseTable(r io.Reader) ([]Socket, error) {
	sc := bufio.NewScanner(r)
	var out []Socket
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read a TCP table: %w", err)
	}
	return out, nil
}

// parseLine parses one socket's line:
//
//	sl  local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
func parseLine(line string) (Socket, error) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return Socket{}, fmt.Errorf("TCP table line %q: %d fields, want at least 10", line, len(f))
	}
	local, err := parseAddr(f[1])
	if err != nil {
		return Socket{}, fmt.Errorf("TCP table line %q: local address: %w", line, err)
	}
	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return Socket{}, fmt.Errorf("TCP table line %q: state: %w", line, err)
	}
	inode, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return Socket{}, fmt.Errorf("TCP table line %q: inode: %w", line, err)
	}
	return Socket{Local: local, State: uint8(st), Inode: inode}, nil
}

// parseAddr parses "0100007F:1F90" (IPv4) or its 32-hex-digit IPv6 form.
func parseAddr(s string) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q: no port", s)
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: port: %w", s, err)
	}
	raw, err := hex.DecodeString(host)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("%q: address is not 8 or 32 hex digits", s)
	}
	// Each 32-bit word was printed as a number in the host's order.
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(p)), nil
}

// SocketInodes returns the inodes of the sockets process pid has open,
// read from procRoot/<pid>/fd ("/proc" on the host). A process that
// exited has none.
func SocketInodes(procRoot string, pid int) (map[uint64]bool, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the descriptors of process %d: %w", pid, err)
	}
	inodes := make(map[uint64]bool)
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		rest, ok := strings.CutPrefix(target, "socket:[")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); err == nil {
			inodes[n] = true
		}
	}
	return inodes, nil
}
