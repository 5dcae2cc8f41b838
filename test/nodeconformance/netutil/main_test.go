package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The specs' own command lines (test/e2e/framework/network/utils.go,
// common/node/lifecycle_hook.go) against a real server.
func TestCurlAsTheSpecsRunIt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hostName":
			_, _ = w.Write([]byte("pod-a"))
		case "/moved":
			http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	cases := []struct {
		name string
		args []string
		out  string
		code int
	}{
		{"get", []string{"-g", "-q", "-s", "--max-time", "15", "--connect-timeout", "1", srv.URL + "/hostName"}, "pod-a", 0},
		{"no scheme", []string{host + "/hostName"}, "pod-a", 0},
		{"http code", []string{"-g", "-q", "-s", "-o", "/dev/null", "-w", "%{http_code}", srv.URL + "/nothing"}, "404", 0},
		{"fail", []string{"-s", "-f", srv.URL + "/nothing"}, "404 page not found\n", curlHTTPError},
		{"no redirect followed", []string{"-s", "-o", "/dev/null", "-w", "%{http_code}", srv.URL + "/moved"}, "302", 0},
		{"unsupported option", []string{"--data", "x", srv.URL}, "", curlUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := curl(tc.args, &out, &errOut)
			if code != tc.code || out.String() != tc.out {
				t.Errorf("curl %q: exit %d, out %q (stderr %q); want exit %d, out %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.out)
			}
		})
	}
}

func TestCurlConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var out, errOut bytes.Buffer
	if code := curl([]string{"-s", "--connect-timeout", "1", "http://" + addr + "/"}, &out, &errOut); code != curlNoConnect {
		t.Errorf("exit %d, want %d (connection refused)", code, curlNoConnect)
	}
}

// echo hostName | nc -w 1 -u IP PORT: one datagram out, the answer back.
func TestNCUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 1024)
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo([]byte("got "+strings.TrimSpace(string(buf[:n]))), from)
	}()
	host, port, _ := net.SplitHostPort(pc.LocalAddr().String())
	var out, errOut bytes.Buffer
	code := nc([]string{"-w", "1", "-u", host, port}, strings.NewReader("hostName\n"), &out, &errOut)
	if code != 0 || out.String() != "got hostName" {
		t.Errorf("exit %d, out %q (stderr %q); want 0, %q", code, out.String(), errOut.String(), "got hostName")
	}
}

func TestNCTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1024)
		n, _ := c.Read(buf)
		_, _ = c.Write(bytes.ToUpper(buf[:n]))
	}()
	host, port, _ := net.SplitHostPort(l.Addr().String())
	var out, errOut bytes.Buffer
	code := nc([]string{host, port}, strings.NewReader("hello"), &out, &errOut)
	if code != 0 || out.String() != "HELLO" {
		t.Errorf("exit %d, out %q (stderr %q); want 0, HELLO", code, out.String(), errOut.String())
	}
	if _, err := parseNC([]string{"-l", "8080"}); err == nil {
		t.Error("nc -l: want an error (client mode only)")
	}
}
