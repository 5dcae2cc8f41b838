package cli

import (
	"bytes"
	"path/filepath"
	"strings"
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

// `podward node` has no default runtime: without --runtime it does not
// start, exits as for a bad flag, and says what each choice means.
func TestNodeWithoutRuntimeFails(t *testing.T) {
	out, errb := &bytes.Buffer{}, &bytes.Buffer{}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	code := execute(t.Context(), Streams{In: strings.NewReader(""), Out: out, Err: errb}, "node", "--kubeconfig", kubeconfig, "--root", t.TempDir())
	if code != ExitBadInput {
		t.Errorf("exit code %d, want %d (a bad flag's)", code, ExitBadInput)
	}
	for _, want := range []string{"--runtime", "--runtime cri", "--runtime process", "podward.io/runtime=process:NoSchedule"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q does not say %q", errb.String(), want)
		}
	}
}

// The pod network is on by default in cluster mode (as on a kubelet's
// node), off standalone (run and serve need no CNI configuration).
func TestPodNetworkFlagDefaults(t *testing.T) {
	root := NewRootCommand(Streams{})
	for cmd, want := range map[string]string{"node": "true", "serve": "false", "run": "false"} {
		c, _, err := root.Find([]string{cmd})
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup("cri-pod-network")
		if f == nil {
			t.Fatalf("%s has no --cri-pod-network", cmd)
		}
		if f.DefValue != want {
			t.Errorf("%s --cri-pod-network defaults to %q, want %q", cmd, f.DefValue, want)
		}
	}
}

// The help tells the truth: node's --runtime has no default and says the
// process runtime's taint; run's and serve's default to process.
func TestRuntimeFlagDefaults(t *testing.T) {
	root := NewRootCommand(Streams{})
	for cmd, want := range map[string]string{"node": "", "serve": "process", "run": "process"} {
		c, _, err := root.Find([]string{cmd})
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup("runtime")
		if f == nil {
			t.Fatalf("%s has no --runtime", cmd)
		}
		if f.DefValue != want {
			t.Errorf("%s --runtime defaults to %q, want %q", cmd, f.DefValue, want)
		}
		if cmd == "node" && !strings.Contains(f.Usage, "podward.io/runtime=process:NoSchedule") {
			t.Errorf("node --runtime's help %q does not name the taint", f.Usage)
		}
	}
}
