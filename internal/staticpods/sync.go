package staticpods

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

// Everything in this file runs on Run's goroutine.

// fullSync adopts the annotated pods the agent knows, then processes every
// manifest of the directory and every file the Source knows of.
func (s *Source) fullSync() error {
	if err := os.MkdirAll(s.absDir, 0o755); err != nil {
		return fmt.Errorf("create manifest directory: %w", err)
	}
	entries, err := os.ReadDir(s.absDir)
	if err != nil {
		// Without the listing nothing can be said to be gone: touch nothing.
		return fmt.Errorf("read manifest directory: %w", err)
	}
	existing := s.existing()
	s.adopt(existing)

	paths := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() && isManifestName(e.Name()) {
			paths[filepath.Join(s.absDir, e.Name())] = true
		}
	}
	for path := range s.files {
		paths[path] = true
	}
	sorted := make([]string, 0, len(paths))
	for path := range paths {
		sorted = append(sorted, path)
	}
	sort.Strings(sorted)
	for _, path := range sorted {
		s.syncFile(path, existing)
	}
	return nil
}

// existing is the agent's pods by namespace/name.
func (s *Source) existing() map[podKey]*v1.Pod {
	out := map[podKey]*v1.Pod{}
	for _, p := range s.applier.ListPods("") {
		out[keyOf(p)] = p
	}
	return out
}

// adopt takes ownership of the agent's pods that carry SourceAnnotation and
// that no file owns yet: after a restart, these are the pods this Source
// created before. A pod from a file outside the directory is deleted when
// that file is gone, and left alone otherwise. Pods being deleted are
// skipped.
func (s *Source) adopt(existing map[podKey]*v1.Pod) {
	for k, p := range existing {
		path := sourceFile(p)
		if path == "" || p.DeletionTimestamp != nil || s.ownerOf(k) != "" {
			continue
		}
		if filepath.Dir(path) == s.absDir {
			s.state(path).pods[k] = struct{}{}
			continue
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			s.deletePod(path, k, "its manifest file is gone")
			continue
		}
		s.log.Debug("pod comes from a manifest outside the directory; left alone",
			"pod", k.String(), "podUID", p.UID, "file", path, "dir", s.absDir)
	}
}

// syncFile brings the pods of the file at path in step with its content.
// existing is the agent's pods, as listed recently.
func (s *Source) syncFile(path string, existing map[podKey]*v1.Pod) {
	delete(s.pending, path)
	if !isManifestName(filepath.Base(path)) {
		s.removeFile(path, "not a manifest file name")
		return
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.removeFile(path, "manifest file removed")
		return
	case err != nil:
		s.reject(path, [32]byte{}, err)
		return
	case !info.Mode().IsRegular():
		// A directory or a FIFO is not a manifest; reading a FIFO would
		// block the Source.
		s.removeFile(path, "not a regular file")
		return
	case info.Size() > maxManifestBytes:
		s.reject(path, [32]byte{}, fmt.Errorf("file is %d bytes, more than the %d a manifest may have", info.Size(), maxManifestBytes))
		return
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.removeFile(path, "manifest file removed")
		return
	}
	sum := sha256.Sum256(data)
	if err != nil {
		s.reject(path, sum, err)
		return
	}
	pods, objs, err := s.prepare(path, data, existing)
	if err == nil {
		err = s.applyObjects(objs)
	}
	if err != nil {
		s.reject(path, sum, err)
		return
	}
	s.apply(path, sum, pods)
}

// prepare decodes a file's content (its pods, and its ConfigMaps and
// Secrets), marks its pods as coming from path and checks them all: names unique in the file and not taken, every pod
// admitted. Any problem rejects the whole file.
func (s *Source) prepare(path string, data []byte, existing map[podKey]*v1.Pod) ([]*model.Pod, []model.Object, error) {
	m, err := model.DecodeManifest(data)
	if err != nil {
		return nil, nil, err
	}
	pods := make([]*model.Pod, len(m.Pods))
	for i, d := range m.Pods {
		pods[i] = d.Pod
	}
	var errs []error
	if len(m.Objects) > 0 && s.applyObject == nil {
		errs = append(errs, errors.New("this agent takes no ConfigMaps or Secrets from manifest files"))
	}
	seen := map[podKey]bool{}
	for _, p := range pods {
		annotate(p, path)
		k := keyOf(p.Pod)
		if seen[k] {
			errs = append(errs, fmt.Errorf("pod %s: declared more than once in the file", k))
			continue
		}
		seen[k] = true
		if err := s.checkName(path, k, existing); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", k, err))
			continue
		}
		if err := s.admit(p); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", k, err))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return pods, m.Objects, nil
}

// applyObjects applies a file's ConfigMaps and Secrets, before its pods
// (which may read them); every failure is in the error.
func (s *Source) applyObjects(objs []model.Object) error {
	var errs []error
	for _, obj := range objs {
		if err := s.applyObject(obj); err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", obj.Kind(), obj.Meta().Namespace, obj.Meta().Name, err))
		}
	}
	return errors.Join(errs...)
}

// checkName makes sure the file at path may own the pod k: no other
// present file owns it, and the agent has no pod of that name that came
// from elsewhere (the API). A pod owned by a file that is gone (a file
// renamed) passes: the file at path takes it over.
func (s *Source) checkName(path string, k podKey, existing map[podKey]*v1.Pod) error {
	owner := s.ownerOf(k)
	if owner != "" && owner != path {
		if _, err := os.Stat(owner); err == nil {
			return fmt.Errorf("already declared by %s", owner)
		}
		return nil
	}
	if owner == "" {
		if p, ok := existing[k]; ok && p.DeletionTimestamp == nil && sourceFile(p) == "" {
			return errors.New("a pod of that name exists and was not created from a manifest file; delete it first")
		}
	}
	return nil
}

// admit checks a pod as ApplyStatic will: with the Applier's Admit when it has
// one, with model.Validate otherwise.
func (s *Source) admit(p *model.Pod) error {
	if a, ok := s.applier.(Admitter); ok {
		return a.Admit(p)
	}
	if errs := model.Validate(p); len(errs) > 0 {
		return fmt.Errorf("%w: %s", agent.ErrInvalid, model.FormatErrors(errs))
	}
	return nil
}

// apply applies the pods of an admitted file: first it deletes the pods
// the file no longer declares, then it applies every pod it declares. An
// error of one pod is reported and does not stop the others.
func (s *Source) apply(path string, sum [32]byte, pods []*model.Pod) {
	st := s.state(path)
	declared := map[podKey]bool{}
	for _, p := range pods {
		declared[keyOf(p.Pod)] = true
	}
	for _, k := range sortedKeys(st.pods) {
		if !declared[k] && s.deletePod(path, k, "removed from its manifest") {
			delete(st.pods, k)
		}
	}

	var errs []error
	retry := false
	for _, p := range pods {
		k := keyOf(p.Pod)
		if owner := s.ownerOf(k); owner != "" && owner != path {
			// checkName found the owner gone: take the pod over.
			delete(s.files[owner].pods, k)
			st.pods[k] = struct{}{}
		}
		got, result, err := s.applier.ApplyStatic(p)
		if err != nil {
			// The pod, if it exists, is left as it was.
			errs = append(errs, fmt.Errorf("pod %s: %w", k, err))
			continue
		}
		st.pods[k] = struct{}{}
		uid := ""
		if got != nil {
			uid = string(got.UID)
		}
		switch result {
		case agent.Unchanged:
			s.log.Debug("static pod unchanged", "pod", k.String(), "podUID", uid, "file", path)
			if got != nil && got.DeletionTimestamp != nil {
				// The pod of that name is still terminating (its file was
				// removed a moment ago): apply again once it is gone.
				retry = true
			}
		default:
			s.log.Info("static pod "+result.String(), "pod", k.String(), "podUID", uid, "file", path)
		}
	}
	if retry {
		s.deferFile(path, retryDelay, false)
	}

	if len(errs) > 0 {
		s.reject(path, sum, errors.Join(errs...))
		return
	}
	if st.reported != "" {
		s.log.Info("manifest file applied after being rejected", "file", path)
	}
	st.sum, st.reported = sum, ""
}

// reject reports a problem with the file at path, once per content and
// problem, and leaves its pods as they are.
func (s *Source) reject(path string, sum [32]byte, err error) {
	st := s.state(path)
	msg := err.Error()
	if st.reported == msg && st.sum == sum {
		s.log.Debug("manifest file still rejected", "file", path, "err", err)
		return
	}
	st.sum, st.reported = sum, msg
	s.log.Warn("manifest file rejected; its pods are left as they are", "file", path, "err", err)
	if s.reporter != nil {
		s.reporter.ManifestError(path, err)
	}
}

// removeFile deletes the pods of a file that is gone and forgets the file.
// A pod whose deletion failed is kept, to be retried by the next rescan.
func (s *Source) removeFile(path, why string) {
	delete(s.pending, path)
	st, ok := s.files[path]
	if !ok {
		return
	}
	for _, k := range sortedKeys(st.pods) {
		if s.deletePod(path, k, why) {
			delete(st.pods, k)
		}
	}
	if len(st.pods) == 0 {
		delete(s.files, path)
	}
}

// deletePod asks for the graceful deletion of pod k; it reports whether
// the pod is gone or going.
func (s *Source) deletePod(path string, k podKey, why string) bool {
	p, err := s.applier.DeletePod(k.ns, k.name, nil)
	switch {
	case err == nil:
		var uid string
		if p != nil {
			uid = string(p.UID)
		}
		s.log.Info("deleting static pod: "+why, "pod", k.String(), "podUID", uid, "file", path)
		return true
	case errors.Is(err, agent.ErrNotFound):
		s.log.Debug("static pod already gone", "pod", k.String(), "file", path)
		return true
	default:
		s.log.Error("delete static pod", "pod", k.String(), "file", path, "err", err)
		return false
	}
}

// state returns the state of the file at path, adding it if needed.
func (s *Source) state(path string) *fileState {
	st, ok := s.files[path]
	if !ok {
		st = &fileState{pods: map[podKey]struct{}{}}
		s.files[path] = st
	}
	return st
}

// ownerOf is the file that owns pod k, or "".
func (s *Source) ownerOf(k podKey) string {
	for path, st := range s.files {
		if _, ok := st.pods[k]; ok {
			return path
		}
	}
	return ""
}

func sortedKeys(m map[podKey]struct{}) []podKey {
	out := make([]podKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
