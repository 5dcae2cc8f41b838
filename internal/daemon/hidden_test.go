package daemon

import (
	"slices"
	"testing"

	"github.com/podward/podward/internal/sockdir"
)

// What no process-runtime container may see: the state directory, and a
// socket's directory when it is podward's own, else only the socket.
func TestHiddenFromContainers(t *testing.T) {
	for name, tc := range map[string]struct {
		sockets, want []string
	}{
		"no socket":             {nil, []string{"/var/lib/podward"}},
		"podward's directory":   {[]string{sockdir.RootDir + "/podward.sock"}, []string{"/var/lib/podward", sockdir.RootDir}},
		"a directory of others": {[]string{"/home/ann/work/agent.sock"}, []string{"/var/lib/podward", "/home/ann/work/agent.sock"}},
		"twice the same":        {[]string{"/tmp/a.sock", "/tmp/a.sock"}, []string{"/var/lib/podward", "/tmp/a.sock"}},
	} {
		if got := hiddenFromContainers("/var/lib/podward", tc.sockets); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
