package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test of the package leaves a goroutine behind:
// Run's loops, the kubelet server and its streams must all end with their
// ctx.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
