package logind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

// logind's and systemd's names on the system bus (org.freedesktop.login1(5),
// org.freedesktop.systemd1(5)).
const (
	logindName       = "org.freedesktop.login1"
	logindPath       = dbus.ObjectPath("/org/freedesktop/login1")
	managerInterface = "org.freedesktop.login1.Manager"

	systemdName      = "org.freedesktop.systemd1"
	systemdPath      = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdInterface = "org.freedesktop.systemd1.Manager"
	logindUnit       = "systemd-logind.service"
)

// callTimeout bounds every call on the bus.
const callTimeout = 5 * time.Second

// inhibitWhy is the reason `systemd-inhibit --list` shows for the lock.
const inhibitWhy = "podward stops the node's pods in order before the machine goes down"

// bus is one connection to the system bus, subscribed to logind's
// PrepareForShutdown.
type bus struct {
	conn   *dbus.Conn
	logind dbus.BusObject
	// owner is logind's unique name, the only sender whose
	// PrepareForShutdown counts.
	owner string
	// signals receives the signals of the connection; it is closed when
	// the connection is.
	signals chan *dbus.Signal
}

// dial connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, or the
// standard socket), makes sure logind is on it, reads its
// InhibitDelayMaxUSec and subscribes to its PrepareForShutdown — before any
// lock is taken, so that no signal is missed. The connection closes when
// ctx ends.
func dial(ctx context.Context) (*bus, time.Duration, error) {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: no system bus: %w", errAbsent, err)
	}
	b := &bus{conn: conn, logind: conn.Object(logindName, logindPath)}
	// A method call, unlike GetNameOwner, starts a logind that the bus
	// activates on demand.
	maxDelay, err := b.maxDelay(ctx)
	if err == nil {
		err = b.refreshOwner(ctx)
	}
	if err != nil {
		b.close()
		if isAbsent(err) {
			return nil, 0, fmt.Errorf("%w: %s is not on the system bus: %w", errAbsent, logindName, err)
		}
		return nil, 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err = conn.AddMatchSignalContext(cctx,
		dbus.WithMatchSender(logindName), dbus.WithMatchObjectPath(logindPath),
		dbus.WithMatchInterface(managerInterface), dbus.WithMatchMember("PrepareForShutdown"))
	if err != nil {
		b.close()
		return nil, 0, fmt.Errorf("subscribe to %s.PrepareForShutdown: %w", managerInterface, err)
	}
	// Buffered so that the connection never delivers out of order (it
	// hands a signal to a goroutine of its own when the channel is full).
	b.signals = make(chan *dbus.Signal, 16)
	conn.Signal(b.signals)
	return b, maxDelay, nil
}

// errAbsent is dial's error when there is no logind to speak to: no system
// bus, or no logind on it.
var errAbsent = errors.New("logind is absent")

// isAbsent says whether err is the bus saying that nobody owns the name.
func isAbsent(err error) bool {
	var de dbus.Error
	if !errors.As(err, &de) {
		return false
	}
	return de.Name == "org.freedesktop.DBus.Error.ServiceUnknown" || de.Name == "org.freedesktop.DBus.Error.NameHasNoOwner"
}

// property reads one of logind's Manager properties.
func (b *bus) property(ctx context.Context, name string) (dbus.Variant, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var v dbus.Variant
	err := b.logind.CallWithContext(cctx, "org.freedesktop.DBus.Properties.Get", 0, managerInterface, name).Store(&v)
	if err != nil {
		return v, fmt.Errorf("read %s.%s: %w", managerInterface, name, err)
	}
	return v, nil
}

// maxDelay reads logind's InhibitDelayMaxUSec: the longest a delay lock
// holds a shutdown back.
func (b *bus) maxDelay(ctx context.Context) (time.Duration, error) {
	v, err := b.property(ctx, "InhibitDelayMaxUSec")
	if err != nil {
		return 0, err
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("read %s.InhibitDelayMaxUSec: a %s, not a uint64", managerInterface, v.Signature())
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// preparing reads logind's PreparingForShutdown: whether it has announced
// a shutdown and is waiting for the delay locks.
func (b *bus) preparing(ctx context.Context) (bool, error) {
	v, err := b.property(ctx, "PreparingForShutdown")
	if err != nil {
		return false, err
	}
	on, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("read %s.PreparingForShutdown: a %s, not a boolean", managerInterface, v.Signature())
	}
	return on, nil
}

// refreshOwner learns logind's unique name.
func (b *bus) refreshOwner(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var owner string
	if err := b.conn.BusObject().CallWithContext(cctx, "org.freedesktop.DBus.GetNameOwner", 0, logindName).Store(&owner); err != nil {
		return fmt.Errorf("owner of %s: %w", logindName, err)
	}
	b.owner = owner
	return nil
}

// fromLogind says whether sender is logind, asking the bus again when it
// is not the owner last seen (logind may have restarted).
func (b *bus) fromLogind(ctx context.Context, sender string) bool {
	if sender == b.owner {
		return true
	}
	return b.refreshOwner(ctx) == nil && sender == b.owner
}

// inhibit takes a delay inhibitor lock on shutdown: logind waits, from
// PrepareForShutdown(true), until the returned file is closed (or its
// InhibitDelayMaxUSec has passed). The caller owns the file.
func (b *bus) inhibit(ctx context.Context) (*os.File, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var fd dbus.UnixFD
	err := b.logind.CallWithContext(cctx, managerInterface+".Inhibit", 0, "shutdown", "podward", inhibitWhy, "delay").Store(&fd)
	if err != nil {
		return nil, fmt.Errorf("%s.Inhibit: %w", managerInterface, err)
	}
	// The fd arrives close-on-exec (Go reads it with MSG_CMSG_CLOEXEC):
	// no shim or container inherits the lock.
	return os.NewFile(uintptr(fd), "logind inhibitor lock"), nil
}

// reloadLogind asks systemd to send SIGHUP to systemd-logind, which then
// reads its configuration again: what the kubelet does after writing its
// drop-in.
func (b *bus) reloadLogind(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := b.conn.Object(systemdName, systemdPath).CallWithContext(cctx, systemdInterface+".KillUnit", 0, logindUnit, "all", int32(syscall.SIGHUP)).Err
	if err != nil {
		return fmt.Errorf("%s.KillUnit(%s, SIGHUP): %w", systemdInterface, logindUnit, err)
	}
	return nil
}

// close closes the connection, and with it the signal channel.
func (b *bus) close() { _ = b.conn.Close() }
