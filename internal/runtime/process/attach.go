package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// attach finds the instances an earlier Runtime on the root left, as New
// describes.
func (r *Runtime) attach() error {
	pods, err := os.ReadDir(r.podsDir())
	if err != nil {
		return err
	}
	for _, p := range pods {
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(r.podsDir(), p.Name(), "instances")
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() {
				if err := r.attachInstance(filepath.Join(dir, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// attachInstance attaches to the instance in dir.
func (r *Runtime) attachInstance(dir string) error {
	log := r.log.With("dir", dir)
	st, err := shim.Load(dir)
	if st.Spec == nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, shim.ErrCorrupt)) {
		// The agent died before it started a shim (or the machine crashed
		// before the spec reached the disk): nothing ever ran.
		log.Info("removing an instance directory without a spec", "err", err)
		return os.RemoveAll(dir)
	}
	if err != nil {
		return fmt.Errorf("instance %s: %w", dir, err)
	}
	// Watch first, then look again: an exit after the second look is seen
	// by the watch; one before it is on disk.
	var shimProc *shim.Proc
	if st.Exit == nil && st.Shim != nil {
		shimProc, err = shim.OpenProc(*st.Shim)
		if err != nil && !errors.Is(err, shim.ErrGone) {
			return fmt.Errorf("instance %s: shim: %w", dir, err)
		}
		if shimProc != nil && shimProc.Exited() {
			// It exited before we looked (and is a zombie child of this
			// process, which a Runtime closed since started it).
			shimProc.Reap()
			shimProc.Close()
			shimProc = nil
		}
	}
	if st.Exit == nil {
		if st, err = shim.Load(dir); err != nil {
			if shimProc != nil {
				shimProc.Close()
			}
			return fmt.Errorf("instance %s: %w", dir, err)
		}
	}
	var started shim.Started
	if st.Container != nil {
		started = *st.Container
	}
	in := newInstance(st.Spec, dir, nil, started)
	log = log.With("pod", in.pod.Key(), "podUID", in.podUID, "container", in.container, "id", in.id)
	r.mountpoints.adopt(in.podUID, st.Spec.Mountpoints)
	switch {
	case st.Exit != nil:
		if shimProc != nil {
			shimProc.Reap()
			shimProc.Close()
		}
		in.setExit(st.Exit.Status())
		r.register(in)
	case shimProc != nil:
		log.Debug("attached to a running container")
		// Output gets what the instance writes from now on.
		offset, err := hostfs.FileSize(in.logPath)
		if err != nil {
			shimProc.Close()
			return fmt.Errorf("instance %s: %w", dir, err)
		}
		r.track(in, shimProc, offset)
	default:
		in.setExit(r.recordLost(dir, st, log))
		r.register(in)
	}
	return nil
}
