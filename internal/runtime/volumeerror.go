package runtime

import "fmt"

// VolumeError is why a pod's volume cannot be set up or refreshed now (an
// object it projects does not exist, lacks a key, or a token cannot be
// had): transient, unlike ErrUnsupported. The pod stays waiting, its
// owner sees a FailedMount event with this message, the kubelet's, and the
// setup is tried again.
type VolumeError struct {
	Volume string
	Err    error
}

func (e *VolumeError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

func (e *VolumeError) Unwrap() error { return e.Err }
