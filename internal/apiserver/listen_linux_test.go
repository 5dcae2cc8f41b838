package apiserver

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// The socket never appears at its path with another mode than SocketMode:
// once its name is in the directory, nothing changes its attributes (a
// chmod after the bind would, and until it a client the umask lets in can
// connect and keep its connection). The kernel's inotify events of the
// directory are the witness. umask 0 is the worst case: a socket bound
// with it is writable, so connectable, by every user.
func TestListenNeverShowsTheSocketWithAnotherMode(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "podward.sock")

	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE|syscall.IN_ATTRIB|syscall.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	// The umask is the process's: no other test of this package runs in
	// parallel, so none creates a file meanwhile.
	old := syscall.Umask(0)
	l, err := Listen(path)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	var events []string
	buf := make([]byte, 64*1024)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			if string(bytes.TrimRight(name, "\x00")) != "podward.sock" {
				continue
			}
			switch {
			case ev.Mask&syscall.IN_CREATE != 0:
				events = append(events, "create")
			case ev.Mask&syscall.IN_MOVED_TO != 0:
				events = append(events, "moved-to")
			case ev.Mask&syscall.IN_ATTRIB != 0:
				events = append(events, "attrib")
			}
		}
	}
	if len(events) != 1 {
		t.Errorf("events of the socket's name: [%s], want it to appear once and change no more", strings.Join(events, " "))
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != SocketMode {
		t.Fatalf("socket: %v %v, want a socket with %v", fi.Mode(), err, SocketMode)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("the socket's directory holds %v (%v), want the socket alone", entries, err)
	}
}
