package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// WarningFailedToRetrieveImagePullSecret is the kubelet's reason of the
// pod's Warning event when some of its image pull secrets cannot be read:
// the pull goes on without them.
const WarningFailedToRetrieveImagePullSecret runtime.WarningReason = "FailedToRetrieveImagePullSecret"

// pullSecret is the content of one image pull secret: a dockerconfigjson,
// or a legacy dockercfg.
type pullSecret struct {
	name   string // its name in spec.imagePullSecrets
	source string // where it was read, for errors
	data   []byte
}

// pullSecrets reads the pod's image pull secrets, in the order of
// spec.imagePullSecrets, each from the pod's own namespace — never
// another's:
//
//  1. the Secret of that name in the pod's namespace, through
//     Config.Objects.Getter (the node's managers, or the agent's store
//     standalone); only the types kubernetes.io/dockerconfigjson and
//     kubernetes.io/dockercfg are credentials, a Secret of another type is
//     skipped, as by the kubelet;
//  2. else the file <PullSecretsDir>/<namespace>/<name>.json, and for
//     namespace default only, the older <PullSecretsDir>/<name>.json.
//
// Those found nowhere are reported, as the kubelet does, with a Warning
// FailedToRetrieveImagePullSecret of the pod, and the pull goes on without
// them.
func (r *Runtime) pullSecrets(ctx context.Context, pod *model.Pod) []pullSecret {
	ns := pod.Namespace
	if ns == "" {
		ns = v1.NamespaceDefault
	}
	var found []pullSecret
	var missing []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, ok := r.pullSecret(ctx, ns, ref.Name)
		if !ok {
			missing = append(missing, ref.Name)
			continue
		}
		if s.data != nil {
			found = append(found, s)
		}
	}
	if len(missing) > 0 {
		r.warn(runtime.Warning{
			PodUID: pod.UID, Reason: WarningFailedToRetrieveImagePullSecret,
			Message: fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", ")),
		})
	}
	return found
}

// pullSecret reads the pull secret name of namespace ns: ok is false when
// it is found nowhere; data is nil for a Secret that holds no credentials.
func (r *Runtime) pullSecret(ctx context.Context, ns, name string) (s pullSecret, ok bool) {
	if g := r.objects.Getter; g != nil {
		gctx, cancel := r.call(ctx)
		secret, err := g.Secret(gctx, ns, name)
		cancel()
		if err == nil {
			return pullSecret{name: name, source: "secret " + ns + "/" + name, data: dockerConfigOf(secret)}, true
		}
		r.log.Debug("image pull secret not read as a Secret", "namespace", ns, "secret", name, "err", err)
	}
	if r.secretsDir == "" || validation.IsDNS1123Subdomain(name) != nil || validation.IsDNS1123Label(ns) != nil {
		return pullSecret{}, false
	}
	files := []string{filepath.Join(r.secretsDir, ns, name+".json")}
	if ns == v1.NamespaceDefault {
		files = append(files, filepath.Join(r.secretsDir, name+".json"))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err == nil {
			return pullSecret{name: name, source: file, data: data}, true
		}
		if !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("cannot read an image pull secret", "file", file, "err", err)
		}
	}
	return pullSecret{}, false
}

// dockerConfigOf is the credentials a Secret holds: the key
// .dockerconfigjson of type kubernetes.io/dockerconfigjson, .dockercfg of
// type kubernetes.io/dockercfg, nil for any other type.
func dockerConfigOf(s *v1.Secret) []byte {
	switch s.Type {
	case v1.SecretTypeDockerConfigJson:
		return s.Data[v1.DockerConfigJsonKey]
	case v1.SecretTypeDockercfg:
		return s.Data[v1.DockerConfigKey]
	}
	return nil
}
