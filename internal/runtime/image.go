package runtime

import (
	"errors"
	"time"
)

// ErrImageNotPresent is returned by an image pull with policy Never for an
// image the runtime does not have.
var ErrImageNotPresent = errors.New("image not present")

// PulledImage is what a pull brought.
type PulledImage struct {
	// Ref is the runtime's reference to the image (its digest or ID).
	Ref string
	// Size is the image's size in bytes, as the runtime reports it.
	Size uint64
	// Duration is how long the pull took.
	Duration time.Duration
}
