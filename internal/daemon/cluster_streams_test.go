package daemon

import (
	"log/slog"
	"testing"
	"time"
)

func TestStreamingConnectionIdleTimeout(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for name, tc := range map[string]struct {
		flag, want time.Duration
	}{
		"default": {0, 4 * time.Hour},
		"set":     {5 * time.Minute, 5 * time.Minute},
	} {
		o := ClusterOptions{StreamingConnectionIdleTimeout: tc.flag}
		if got := o.streams(&durable{}, log).Timeouts().Idle; got != tc.want {
			t.Errorf("%s: idle timeout %v, want %v", name, got, tc.want)
		}
	}
	if DefaultStreamingConnectionIdleTimeout != 4*time.Hour {
		t.Errorf("default %v, want the kubelet's 4h", DefaultStreamingConnectionIdleTimeout)
	}
}

// `podward serve --streaming-connection-idle-timeout` bounds the socket's
// streams as the node's flag bounds the kubelet port's.
func TestServeStreamingConnectionIdleTimeout(t *testing.T) {
	for name, tc := range map[string]struct {
		flag, want time.Duration
	}{
		"default": {0, 4 * time.Hour},
		"set":     {90 * time.Second, 90 * time.Second},
	} {
		a := &Agent{agent: &durable{}, log: slog.New(slog.DiscardHandler), streamIdle: tc.flag}
		if got := a.streams().Timeouts().Idle; got != tc.want {
			t.Errorf("%s: idle timeout %v, want %v", name, got, tc.want)
		}
	}
}
