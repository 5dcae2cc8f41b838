package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// ImageRuntime is the fake runtime with images: a test opts in to the pod
// worker's pull logic by using it instead of Runtime. Images are present
// once pulled or listed in Present.
type ImageRuntime struct {
	*Runtime
	// PullHook, when set, runs inside PullImage and gives its error (e.g.
	// to fail a pull, or to block until ctx is done like a slow pull).
	PullHook func(ctx context.Context, image string) error

	imu     sync.Mutex
	present map[string]bool
	pulls   []string
}

// NewImageRuntime returns a fake runtime with images; present are there
// from the start.
func NewImageRuntime(r *Runtime, present ...string) *ImageRuntime {
	ir := &ImageRuntime{Runtime: r, present: map[string]bool{}}
	for _, img := range present {
		ir.present[img] = true
	}
	return ir
}

// ImagePresent says whether the image was pulled or given as present.
func (r *ImageRuntime) ImagePresent(ctx context.Context, image string) (bool, error) {
	r.imu.Lock()
	defer r.imu.Unlock()
	return r.present[image], nil
}

// PullImage records the pull and makes the image present, unless PullHook
// fails it.
func (r *ImageRuntime) PullImage(ctx context.Context, pod *model.Pod, image string) (runtime.PulledImage, error) {
	r.mu.Lock()
	r.record("pull %s", image)
	r.mu.Unlock()
	if r.PullHook != nil {
		if err := r.PullHook(ctx, image); err != nil {
			return runtime.PulledImage{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return runtime.PulledImage{}, err
	}
	r.imu.Lock()
	defer r.imu.Unlock()
	r.present[image] = true
	r.pulls = append(r.pulls, image)
	return runtime.PulledImage{Ref: fmt.Sprintf("sha256:%x", len(image)), Size: 1 << 20, Duration: 10 * time.Millisecond}, nil
}

// Pulls lists the images pulled successfully, in order.
func (r *ImageRuntime) Pulls() []string {
	r.imu.Lock()
	defer r.imu.Unlock()
	return append([]string(nil), r.pulls...)
}
