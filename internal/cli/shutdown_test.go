package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/internal/wire"
)

func TestPrintShutdown(t *testing.T) {
	at := func(s float64) *time.Time {
		v := time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local).Add(time.Duration(s * float64(time.Second)))
		return &v
	}
	st := &wire.NodeShutdown{
		State: wire.ShutdownTerminating, Reason: wire.ShutdownReasonAPI, BeganAt: at(0),
		Groups: []wire.NodeShutdownGroup{
			{Priority: 0, Budget: "20s", StartedAt: at(0), EndedAt: at(1.5), Pods: []wire.NodeShutdownPod{
				{Namespace: "default", Name: "web", GracePeriodSeconds: 20, Deadline: at(20)},
			}},
			{Priority: 2000000000, Budget: "10s", Pods: []wire.NodeShutdownPod{{Namespace: "kube-system", Name: "dns", GracePeriodSeconds: 10}}},
		},
	}
	var b bytes.Buffer
	if err := printShutdown(&b, "", st); err != nil {
		t.Fatal(err)
	}
	want := `node shutdown Terminating (API), began 12:00:00.000
  group priority 0, budget 20s: 1 pod(s), started 12:00:00.000, ended 12:00:01.500
    default/web: grace period 20s, deadline 12:00:20.000
  group priority 2000000000, budget 10s: 1 pod(s), waiting
    kube-system/dns: grace period 10s
`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := printShutdown(&b, "", &wire.NodeShutdown{}); err != nil || b.String() != "no node shutdown\n" {
		t.Errorf("no shutdown: %q %v", b.String(), err)
	}
	b.Reset()
	if err := printShutdown(&b, "json", st); err != nil || !strings.Contains(b.String(), `"gracePeriodSeconds": 20`) {
		t.Errorf("json: %s %v", b.String(), err)
	}
}
