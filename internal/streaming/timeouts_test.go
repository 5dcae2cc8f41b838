package streaming

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// streamTimeout bounds the waits of the timeouts' tests.
const streamTimeout = 10 * time.Second

// upgradeOnly upgrades an exec of srv's (stdout and stderr) to SPDY and
// opens none of its streams.
func upgradeOnly(t *testing.T, url string) httpstream.Connection {
	t.Helper()
	rt, err := spdy.NewRoundTripper(nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url+"/exec/ns/web/app?command=true&output=1&error=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(httpstream.HeaderProtocolVersion, remotecommandconsts.StreamProtocolV4Name)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := rt.NewConnection(resp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestStreamNeverOpenedIsClosed: a client that upgrades but never opens
// its streams loses its connection after the creation timeout.
func TestStreamNeverOpenedIsClosed(t *testing.T) {
	s := New(pods{testPod()}, execRuntime{}, nil).WithTimeouts(Timeouts{Creation: 50 * time.Millisecond})
	conn := upgradeOnly(t, serveExec(t, s).URL)
	select {
	case <-conn.CloseChan():
	case <-time.After(streamTimeout):
		t.Fatal("the connection without streams was kept")
	}
}

// blockRuntime's execs wait for their stdin to end.
type blockRuntime struct{ runtime.Runtime }

func (blockRuntime) ExecStream(_ context.Context, _ *model.Pod, _ model.ContainerRef, _ []string, s runtime.ExecStreams) (int, error) {
	_, _ = io.Copy(io.Discard, s.Stdin)
	return 0, nil
}

// TestIdleStreamIsClosed: an exec none of whose streams carries data
// ends after the idle timeout (--streaming-connection-idle-timeout).
func TestIdleStreamIsClosed(t *testing.T) {
	s := New(pods{testPod()}, blockRuntime{}, nil).WithTimeouts(Timeouts{Idle: 100 * time.Millisecond})
	srv := serveExec(t, s)
	stdin, never := io.Pipe()
	defer never.Close()
	done := make(chan error, 1)
	go func() {
		done <- execThrough(t, srv, "app", []string{"cat"}, false, remotecommand.StreamOptions{Stdin: stdin, Stdout: io.Discard, Stderr: io.Discard})
	}()
	select {
	case <-done: // the server closed it: the stdin never ends
	case <-time.After(streamTimeout):
		t.Fatal("the idle exec was kept")
	}
}

func TestDefaultTimeouts(t *testing.T) {
	for name, s := range map[string]*Server{
		"New":          New(pods{}, execRuntime{}, nil),
		"WithTimeouts": New(pods{}, execRuntime{}, nil).WithTimeouts(Timeouts{}),
	} {
		if s.idle != 4*time.Hour || s.creation != 30*time.Second {
			t.Errorf("%s: idle %v, creation %v; want the kubelet's 4h and 30s", name, s.idle, s.creation)
		}
	}
}
