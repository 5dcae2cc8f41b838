package cli

import (
	"testing"
	"time"
)

func TestNodeStreamingConnectionIdleTimeoutFlag(t *testing.T) {
	f := newNodeCommand(Streams{}, &apiOptions{}).Flags().Lookup("streaming-connection-idle-timeout")
	if f == nil {
		t.Fatal("no --streaming-connection-idle-timeout")
	}
	if f.DefValue != (4 * time.Hour).String() {
		t.Fatalf("default %s, want the kubelet's 4h0m0s", f.DefValue)
	}
}
