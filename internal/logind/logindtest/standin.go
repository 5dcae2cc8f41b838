package logindtest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// logind's and systemd's names on the system bus (org.freedesktop.login1(5),
// org.freedesktop.systemd1(5)), which the stand-in owns.
const (
	LogindName       = "org.freedesktop.login1"
	LogindPath       = dbus.ObjectPath("/org/freedesktop/login1")
	ManagerInterface = "org.freedesktop.login1.Manager"

	systemdName      = "org.freedesktop.systemd1"
	systemdPath      = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdInterface = "org.freedesktop.systemd1.Manager"
)

// StandIn is org.freedesktop.login1 (and the org.freedesktop.systemd1 that
// reloads it) on a bus: Inhibit hands out the write end of a pipe whose
// read end the stand-in keeps — a read sees EOF once every copy of the
// write end is closed, as logind sees a lock released; InhibitDelayMaxUSec
// and PreparingForShutdown are what the test sets; KillUnit reads the
// drop-in directory as logind reads its drop-ins on SIGHUP.
//
// Its methods are safe for concurrent use. Close releases what it holds.
type StandIn struct {
	conn      *dbus.Conn
	dropInDir string // "": KillUnit leaves InhibitDelayMaxUSec alone

	maxDelayUSec atomic.Uint64
	preparing    atomic.Bool

	// Inhibits receives every lock Inhibit hands out, Reloads every
	// KillUnit ("UNIT WHO SIGNAL"). Each holds 8: a test that does not
	// read them makes the next call wait.
	Inhibits chan *Lock
	Reloads  chan string

	mu    sync.Mutex
	files []*os.File // every pipe end handed out, for Close
}

// Lock is one lock Inhibit handed out.
type Lock struct {
	// Args are Inhibit's arguments: what, who, why, mode.
	Args []string
	// Sender is the unique name of the caller.
	Sender string
	r      *os.File
	w      *os.File // the stand-in's copy, until Drop
}

// New makes conn the stand-in: it exports logind's and systemd's objects
// and owns their names. maxDelay is its InhibitDelayMaxUSec; dropInDir,
// when set, is where KillUnit reads it again from.
func New(conn *dbus.Conn, maxDelay time.Duration, dropInDir string) (*StandIn, error) {
	s := &StandIn{conn: conn, dropInDir: dropInDir, Inhibits: make(chan *Lock, 8), Reloads: make(chan string, 8)}
	s.SetMaxDelay(maxDelay)
	exports := []struct {
		v     any
		path  dbus.ObjectPath
		iface string
	}{
		{login1Manager{s}, LogindPath, ManagerInterface},
		{login1Properties{s}, LogindPath, "org.freedesktop.DBus.Properties"},
		{systemd1Manager{s}, systemdPath, systemdInterface},
	}
	for _, e := range exports {
		if err := conn.Export(e.v, e.path, e.iface); err != nil {
			return nil, fmt.Errorf("export %s: %w", e.iface, err)
		}
	}
	for _, name := range []string{LogindName, systemdName} {
		reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
		if err != nil {
			return nil, fmt.Errorf("own %s: %w", name, err)
		}
		if reply != dbus.RequestNameReplyPrimaryOwner {
			return nil, fmt.Errorf("own %s: reply %v", name, reply)
		}
	}
	return s, nil
}

// SetMaxDelay sets InhibitDelayMaxUSec.
func (s *StandIn) SetMaxDelay(d time.Duration) { s.maxDelayUSec.Store(uint64(d / time.Microsecond)) }

// SetPreparing sets PreparingForShutdown: whether logind has announced a
// shutdown already.
func (s *StandIn) SetPreparing(on bool) { s.preparing.Store(on) }

// Emit sends PrepareForShutdown(active) as logind does: a broadcast from
// its connection.
func (s *StandIn) Emit(active bool) error {
	return s.conn.Emit(LogindPath, ManagerInterface+".PrepareForShutdown", active)
}

// Close closes every pipe end the stand-in handed out or kept.
func (s *StandIn) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		_ = f.Close()
	}
	s.files = nil
}

type login1Manager struct{ s *StandIn }

func (m login1Manager) Inhibit(sender dbus.Sender, what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	m.s.mu.Lock()
	m.s.files = append(m.s.files, r, w)
	m.s.mu.Unlock()
	fd := dbus.UnixFD(w.Fd()) // before Drop may close w
	m.s.Inhibits <- &Lock{Args: []string{what, who, why, mode}, Sender: string(sender), r: r, w: w}
	return fd, nil
}

type login1Properties struct{ s *StandIn }

func (p login1Properties) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	switch {
	case iface == ManagerInterface && name == "InhibitDelayMaxUSec":
		return dbus.MakeVariant(p.s.maxDelayUSec.Load()), nil
	case iface == ManagerInterface && name == "PreparingForShutdown":
		return dbus.MakeVariant(p.s.preparing.Load()), nil
	default:
		return dbus.Variant{}, dbus.NewError("org.freedesktop.DBus.Error.UnknownProperty", []any{iface + "." + name})
	}
}

type systemd1Manager struct{ s *StandIn }

// KillUnit is systemd's; with a drop-in directory, it makes the stand-in
// read InhibitDelayMaxSec from its *.conf files in lexical order, the last
// one winning, as logind does on SIGHUP.
func (m systemd1Manager) KillUnit(unit, who string, signal int32) *dbus.Error {
	call := fmt.Sprintf("%s %s %d", unit, who, signal)
	if m.s.dropInDir != "" {
		if err := m.s.reload(); err != nil {
			return dbus.MakeFailedError(err)
		}
	}
	m.s.Reloads <- call
	return nil
}

func (s *StandIn) reload() error {
	paths, err := filepath.Glob(filepath.Join(s.dropInDir, "*.conf"))
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "InhibitDelayMaxSec="); ok {
				secs, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				s.SetMaxDelay(time.Duration(secs) * time.Second)
			}
		}
	}
	return nil
}

// Drop closes the stand-in's copy of the lock's fd: from then on the
// caller's copy alone holds the lock. Call it once the caller has the fd
// (its Inhibit call returned): the reply carries a copy only once it is
// sent, after Inhibit returns.
func (l *Lock) Drop() error {
	if l.w == nil {
		return nil
	}
	err := l.w.Close()
	l.w = nil
	return err
}

// Held says whether the lock is still held: no EOF (POLLHUP) on its read
// end yet. It looks, it does not wait.
func (l *Lock) Held() (bool, error) {
	raw, err := l.r.SyscallConn()
	if err != nil {
		return false, err
	}
	var n int
	var perr error
	if err := raw.Control(func(fd uintptr) {
		n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	}); err != nil {
		return false, err
	}
	if perr != nil {
		return false, perr
	}
	return n == 0, nil
}

// ErrStillHeld is WaitReleased's error when the lock outlived its wait.
var ErrStillHeld = errors.New("the lock is still held")

// WaitReleased waits until every copy of the lock's fd is closed, for at
// most within (0: no limit).
func (l *Lock) WaitReleased(within time.Duration) error {
	var deadline time.Time
	if within > 0 {
		deadline = time.Now().Add(within)
	}
	if err := l.r.SetReadDeadline(deadline); err != nil {
		return err
	}
	_, err := l.r.Read(make([]byte, 1))
	switch {
	case err == io.EOF:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w after %v (handed to %s)", ErrStillHeld, within, l.Sender)
	case err == nil:
		return fmt.Errorf("the lock handed to %s was written to", l.Sender)
	default:
		return fmt.Errorf("wait for the lock handed to %s: %w", l.Sender, err)
	}
}
