package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/client"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "pwclient")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve runs an API server in front of an agent with the fake runtime.
func serve(t *testing.T) *client.Client {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	agentCtx, stopAgent := context.WithCancel(context.Background())
	log := slog.New(slog.DiscardHandler)
	a := agent.New(agentCtx, agent.Config{Runtime: fake.New(clk), Clock: clk, Planner: planner.DefaultConfig(), Logger: log})
	socket := filepath.Join(shortDir(t), "api.sock")
	l, err := apiserver.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- apiserver.New(a, log).Serve(ctx, l) }()
	c := client.New(socket)
	t.Cleanup(func() {
		c.Close()
		stop()
		<-served
		stopAgent()
		a.Wait()
	})
	return c
}

func pod(name, command string) *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox", Command: []string{command}}}},
	}
}

func TestNoAgent(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope", "podward.sock")
	stale := filepath.Join(shortDir(t), "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	for socket, reason := range map[string]client.ConnReason{missing: client.NoSocket, stale: client.Refused} {
		c := client.New(socket)
		_, err := c.ListPods(context.Background(), "", client.ListOptions{})
		var ce *client.ConnError
		if !errors.Is(err, client.ErrNoAgent) || !errors.As(err, &ce) || ce.Socket != socket || ce.Reason != reason {
			t.Errorf("%s: err = %v, want a ConnError (%v)", socket, err, reason)
		}
		if _, err := c.WatchPods(context.Background(), "", client.ListOptions{}); !errors.Is(err, client.ErrNoAgent) {
			t.Errorf("watch of %s: err = %v", socket, err)
		}
		c.Close()
	}
}

func TestPodsAndStatusErrors(t *testing.T) {
	c := serve(t)
	ctx := context.Background()

	_, err := c.GetPod(ctx, "default", "web")
	if !apierrors.IsNotFound(err) || err.Error() != `pods "web" not found` {
		t.Fatalf("get of a missing pod: %v", err)
	}

	w, err := c.WatchPods(ctx, "default", client.ListOptions{FieldSelector: "metadata.name=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	created, res, err := c.ApplyPod(ctx, pod("web", "sleep"))
	if err != nil || res != client.Created || created.UID == "" {
		t.Fatalf("apply: %v %q", err, res)
	}
	if _, res, err := c.ApplyPod(ctx, pod("web", "sleep")); err != nil || res != client.Unchanged {
		t.Fatalf("apply again: %v %q", err, res)
	}
	if _, res, err := c.ApplyPod(ctx, pod("web", "true")); err != nil || res != client.Configured {
		t.Fatalf("apply of a change: %v %q", err, res)
	}
	ev, err := w.Next()
	if err != nil || ev.Type != client.Added || ev.Object.UID != created.UID {
		t.Fatalf("first watch event: %v %+v", err, ev)
	}
	// The old pod goes, then its replacement comes.
	for ev.Type != client.Added || ev.Object.UID == created.UID {
		if ev, err = w.Next(); err != nil {
			t.Fatal(err)
		}
	}
	replacement := ev.Object

	if _, err := c.CreatePod(ctx, pod("web", "sleep")); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create of a taken name: %v", err)
	}
	bad := pod("bad", "sleep")
	bad.Spec.Containers[0].Image = ""
	_, err = c.CreatePod(ctx, bad)
	var se *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &se) || len(se.ErrStatus.Details.Causes) != 1 ||
		se.ErrStatus.Details.Causes[0].Field != "spec.containers[0].image" {
		t.Fatalf("create of an invalid pod: %v", err)
	}

	list, err := c.ListPods(ctx, "", client.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %+v", err, list)
	}
	uid := string(replacement.UID)
	other := "not-" + uid
	if _, err := c.DeletePod(ctx, "default", "web", client.DeleteOptions{UID: &other}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with a wrong UID: %v", err)
	}
	zero := int64(0)
	if _, err := c.DeletePod(ctx, "default", "web", client.DeleteOptions{GracePeriodSeconds: &zero, UID: &uid}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == client.Deleted && ev.Object.UID == replacement.UID {
			break
		}
	}

	events, err := c.ListEvents(ctx, "default", client.ListOptions{FieldSelector: "involvedObject.uid=" + uid})
	if err != nil || len(events.Items) == 0 || events.Items[0].Reason != "Scheduled" {
		t.Fatalf("events: %v %+v", err, events)
	}
	if _, err := c.Logs(ctx, "default", "nope", v1.PodLogOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("logs of a missing pod: %v", err)
	}
}

func TestCloseEndsAWatch(t *testing.T) {
	c := serve(t)
	w, err := c.WatchEvents(context.Background(), "", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := w.Next()
		got <- err
	}()
	w.Close()
	select {
	case err := <-got:
		if err == nil {
			t.Fatal("Next returned an event after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end Next")
	}
}

// A failure that is not a Status still comes back as a StatusError.
func TestNonStatusError(t *testing.T) {
	socket := filepath.Join(shortDir(t), "proxy.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream is down", http.StatusBadGateway)
	})}
	go srv.Serve(l)
	defer srv.Close()
	c := client.New(socket)
	defer c.Close()
	_, err = c.GetPod(context.Background(), "default", "web")
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusBadGateway || se.ErrStatus.Message != "upstream is down" {
		t.Fatalf("err = %#v", err)
	}
	_, err = c.Logs(context.Background(), "default", "web", v1.PodLogOptions{})
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "upstream") {
		t.Fatalf("logs: %v", err)
	}
}

func TestDefaultSocket(t *testing.T) {
	t.Setenv(client.SocketEnv, "/tmp/x/podward.sock")
	if got := client.DefaultSocket(); got != "/tmp/x/podward.sock" {
		t.Fatalf("with $%s: %q", client.SocketEnv, got)
	}
	t.Setenv(client.SocketEnv, "")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	want := "/run/user/1000/podward/podward.sock"
	if os.Geteuid() == 0 {
		want = client.RootSocket
	}
	if got := client.DefaultSocket(); got != want {
		t.Fatalf("default socket %q, want %q", got, want)
	}
}
