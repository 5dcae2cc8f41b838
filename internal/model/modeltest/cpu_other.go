//go:build !unix

package modeltest

import "time"

// cpuTime is unknown here: Loop reports no cpu-ns/op.
func cpuTime() time.Duration { return 0 }
