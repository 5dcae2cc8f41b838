package shim

import (
	"net"
	"path/filepath"
	"testing"
)

// An attach ends without an error when the shim closes the connection
// with input of the client's still unread (the kernel then resets it):
// the container exited while the client typed, as `exit` through an
// attach does.
func TestReadOutputTakesAResetAsTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv := <-accepted
	if srv == nil {
		t.Fatal("no connection accepted")
	}
	if _, err := conn.Write([]byte("typed, never read")); err != nil {
		t.Fatal(err)
	}
	srv.Close() // unread input: a reset
	if err := readOutput(conn, AttachStreams{}); err != nil {
		t.Errorf("readOutput = %v, want the attach's end", err)
	}
}
