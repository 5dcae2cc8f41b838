package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// A foreground run keeps no store, so whatever its runtime holds when it
// starts is not its own: it is what an earlier run on the same root left
// when it was killed (SIGKILL gives it no chance to stop its pods). Its
// process-runtime containers died with it (process.Config.Tethered); their
// state, and any container of another runtime, is removed here, and each
// root cleaned is reported.

// errRunRootInUse is a run root that a live `podward run` holds.
var errRunRootInUse = errors.New("the state directory is in use by another podward run")

// tempRootPattern names the temporary roots of runs (os.MkdirTemp).
const tempRootPattern = "podward-run-"

// reapTimeout bounds the wait for the SIGKILLed containers of a root.
const reapTimeout = 10 * time.Second

// lockRunRoot takes the run's lock on its root for the run's life, so that
// a later run tells a live run's temporary root from a dead one's.
func lockRunRoot(root string) (*os.File, error) {
	return hostfs.LockRoot(root, "podward run", errRunRootInUse)
}

// reapPods kills every container rt still runs, waits for their exits
// (bounded by reapTimeout) and removes the pods' state. It reports how many
// pods it removed. rt's events must not have another reader.
func reapPods(ctx context.Context, rt runtime.Runtime) (int, error) {
	pl, ok := rt.(runtime.PodLister)
	if !ok {
		return 0, nil
	}
	uids, err := pl.ListPods()
	if err != nil || len(uids) == 0 {
		return 0, err
	}
	running := map[string]bool{}
	for _, uid := range uids {
		ids, err := runtime.KillRunning(ctx, rt, uid)
		if err != nil {
			return 0, err
		}
		for _, id := range ids {
			running[id] = true
		}
	}
	timeout := time.NewTimer(reapTimeout)
	defer timeout.Stop()
	for len(running) > 0 {
		select {
		case ev := <-rt.Events():
			delete(running, ev.ID)
		case <-timeout.C:
			return 0, fmt.Errorf("%d containers still run %v after SIGKILL", len(running), reapTimeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	for _, uid := range uids {
		pod := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}}
		if err := rt.CleanupPod(ctx, pod); err != nil {
			return 0, fmt.Errorf("remove the state of pod %s: %w", uid, err)
		}
	}
	return len(uids), nil
}

// cleanStaleRuns removes the temporary roots that earlier runs, killed,
// left in the temporary directory: those no live run holds (lockRunRoot),
// other than own. Each runtime's part is reaped with that runtime (the CRI
// runtime's only when o selects it: it needs the endpoint; the root stays
// until a run on CRI cleans it). It returns one line per root it removed or
// could not.
func cleanStaleRuns(ctx context.Context, o *Options, own string, clk clock.Clock, log *slog.Logger) []string {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), tempRootPattern+"*"))
	if err != nil {
		return nil
	}
	var notes []string
	for _, dir := range dirs {
		if dir == own {
			continue
		}
		if note := cleanStaleRun(ctx, o, dir, clk, log); note != "" {
			notes = append(notes, note)
		}
	}
	return notes
}

// cleanStaleRun cleans one temporary root, unless a live run holds it or it
// is not a run's; it returns what it did, "" for a root it left alone.
func cleanStaleRun(ctx context.Context, o *Options, dir string, clk clock.Clock, log *slog.Logger) string {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return ""
	}
	// A run locks its root before it opens a runtime there: a root with no
	// runtime's directory yet may be a run that is only starting, unless
	// it is older than that takes.
	if !hasRuntimeDir(dir) && time.Since(fi.ModTime()) < time.Minute {
		return ""
	}
	lock, err := lockRunRoot(dir)
	if err != nil {
		return ""
	}
	defer lock.Close()
	pods := 0
	for _, kind := range []string{RuntimeProcess, RuntimeCRI} {
		sub := filepath.Join(dir, kind)
		if _, err := os.Stat(sub); err != nil {
			continue
		}
		if kind == RuntimeCRI && o.Runtime.Kind != RuntimeCRI {
			return fmt.Sprintf("%s, left by an earlier run that was killed, has containers of the CRI runtime: a run with --runtime cri removes them", dir)
		}
		ro := o.Runtime
		ro.Kind = kind
		rt, err := ro.open(ctx, dir, clk, log, nil, false, crilog.Rotation{MaxSize: o.ContainerLogMaxSize, MaxFiles: o.ContainerLogMaxFiles}, nil)
		if err != nil {
			return fmt.Sprintf("could not clean %s, left by an earlier run that was killed: %v", dir, err)
		}
		n, err := reapPods(ctx, rt)
		_ = rt.Close()
		if err != nil {
			return fmt.Sprintf("could not clean %s, left by an earlier run that was killed: %v", dir, err)
		}
		pods += n
	}
	if err := hostfs.RemoveAllUnmounted(dir); err != nil {
		return fmt.Sprintf("could not remove %s, left by an earlier run that was killed: %v", dir, err)
	}
	return fmt.Sprintf("removed %s, left by an earlier run that was killed (%s)", dir, podCount(pods))
}

func podCount(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// hasRuntimeDir says whether a runtime's state directory exists under root.
func hasRuntimeDir(root string) bool {
	for _, kind := range []string{RuntimeProcess, RuntimeCRI} {
		if _, err := os.Stat(filepath.Join(root, kind)); err == nil {
			return true
		}
	}
	return false
}
