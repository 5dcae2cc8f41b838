package cri

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podspec"
)

// Termination messages, as the kubelet does them (kuberuntime_container.go,
// makeMounts and convertToKubeContainerStatus): each instance gets a file
// of its own on the host, Root/pods/<podUID>/containers/<name>/
// <attempt>-<random>, mounted at the container's terminationMessagePath;
// its annotations say where and with which policy, so that the message is
// found from the container's status alone (after an agent restart too)
// once it exited. The rules of the message are podspec's.

// messagesDir holds the pod's termination-message files.
func (r *Runtime) messagesDir(uid types.UID) string {
	return filepath.Join(r.podDir(uid), "containers")
}

// terminationMount creates the termination-message file of a new instance
// (attempt) of c and returns its mount, and the annotations that find it
// again; nil and none when c has no terminationMessagePath.
func (r *Runtime) terminationMount(pod *model.Pod, c *v1.Container, attempt int) (*runtimeapi.Mount, map[string]string, error) {
	path := podspec.TerminationMessagePath(c)
	if path == "" {
		return nil, nil, nil
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, nil, err
	}
	file := filepath.Join(r.messagesDir(pod.UID), c.Name, strconv.Itoa(attempt)+"-"+hex.EncodeToString(b[:]))
	if err := hostfs.CreateMessageFile(file); err != nil {
		return nil, nil, err
	}
	annotations := map[string]string{
		AnnotationTerminationMessagePath:   path,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
		AnnotationTerminationMessageLimit:  strconv.Itoa(podspec.TerminationMessageLimit(pod)),
	}
	return &runtimeapi.Mount{ContainerPath: path, HostPath: file}, annotations, nil
}

// terminationMessage is how the message of the container st is the status
// of is found: its file is the host path of the mount at the annotated
// path.
func terminationMessage(st *runtimeapi.ContainerStatus) podspec.TerminationMessage {
	a := st.GetAnnotations()
	tm := podspec.TerminationMessage{
		FallbackToLogs: a[AnnotationTerminationMessagePolicy] == string(v1.TerminationMessageFallbackToLogsOnError),
	}
	tm.Limit, _ = strconv.Atoi(a[AnnotationTerminationMessageLimit])
	if path := a[AnnotationTerminationMessagePath]; path != "" {
		for _, m := range st.GetMounts() {
			if m.GetContainerPath() == path {
				tm.File = m.GetHostPath()
				break
			}
		}
	}
	return tm
}

// removeOldMessageFiles removes the termination-message files of the
// container's instances before keep, whose containers removeOldInstances
// removes: a crash loop does not pile them up.
func (r *Runtime) removeOldMessageFiles(uid types.UID, container string, keep int) error {
	dir := filepath.Join(r.messagesDir(uid), container)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "-")
		if a, err := strconv.Atoi(prefix); ok && err == nil && a < keep {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}
