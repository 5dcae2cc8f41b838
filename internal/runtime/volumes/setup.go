package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// Host is where and how a runtime keeps a pod's Managed volumes.
type Host struct {
	// Dir is the volume's directory: <pod>/volumes/<name>.
	Dir func(vol *v1.Volume) string
	// CanMount says whether a tmpfs can be mounted (root). Without, an
	// InMemory volume's payload is computed (a missing object still holds
	// the pod back) but not written: nothing may reach persistent disk, and
	// no container could mount it anyway.
	CanMount bool
	// Now dates the timestamped directories.
	Now func() time.Time
}

// Setup makes vol's directory (a tmpfs when InMemory) and writes its
// payload into it atomically. It is idempotent: called again, it writes
// only what changed. An error computing the payload is a
// *runtime.VolumeError.
func Setup(ctx context.Context, in Input, h Host, vol *v1.Volume) error {
	dir := h.Dir(vol)
	memory := InMemory(vol)
	switch {
	case memory && h.CanMount:
		if err := hostfs.PrepareMemoryDir(dir); err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
	case !memory:
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
	}
	in.Dir = dir
	p, err := Payload(ctx, in, vol)
	if err != nil {
		return err
	}
	if memory && !h.CanMount {
		return nil
	}
	if g := fsGroup(in.Pod); g != nil {
		// The kubelet's volume ownership of a read-only volume: the
		// pod's fsGroup owns every file, which it may read.
		for path, f := range p {
			f.Mode |= 0o440
			f.GID = g
			p[path] = f
		}
	}
	if _, err := hostfs.AtomicWrite(dir, p, h.Now()); err != nil {
		return fmt.Errorf("volume %q: %w", vol.Name, err)
	}
	return nil
}

// Refresh writes again each Managed volume of in.Pod that was set up
// (whose directory has its ..data), when its payload changed. It goes on
// past a failure and returns the first (a *runtime.VolumeError for a
// payload that cannot be computed now).
func Refresh(ctx context.Context, in Input, h Host) error {
	var first error
	for i := range in.Pod.Spec.Volumes {
		vol := &in.Pod.Spec.Volumes[i]
		if !Managed(vol) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := os.Lstat(filepath.Join(h.Dir(vol), "..data")); err != nil {
			continue
		}
		if err := Setup(ctx, in, h, vol); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// fsGroup is the pod's fsGroup, nil when it has none.
func fsGroup(pod *model.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// fsUser is the user every container of the pod runs as, when they all
// set one (their own runAsUser, or the pod's) and it is the same, as the
// kubelet's FsUserFrom; nil otherwise.
func fsUser(pod *model.Pod) *int64 {
	var podUser, user *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		podUser = sc.RunAsUser
	}
	for _, ref := range pod.Containers() {
		c := pod.Container(ref)
		u := podUser
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			u = c.SecurityContext.RunAsUser
		}
		if u == nil || user != nil && *user != *u {
			return nil
		}
		user = u
	}
	return user
}
