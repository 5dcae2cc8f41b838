package staticpods

import (
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// isManifestName says whether a file of the directory is a manifest:
// *.yaml, *.yml or *.json (any case), not hidden (a leading '.', as the
// kubelet ignores them: editors' swap files, `.tmp` files being written),
// not an editor backup ("~" suffix) or swap file (".swp").
func isManifestName(name string) bool {
	if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasSuffix(name, ".swp") {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	default:
		return false
	}
}

// podKey is a pod's identity in the agent: namespace and name.
type podKey struct {
	ns, name string
}

func (k podKey) String() string { return k.ns + "/" + k.name }

func keyOf(p *v1.Pod) podKey { return podKey{ns: p.Namespace, name: p.Name} }

// annotate marks pod as coming from the file at path.
func annotate(pod *model.Pod, path string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[SourceAnnotation] = sourcePrefix + path
	pod.Annotations[ConfigSourceAnnotation] = ConfigSourceFile
}

// sourceFile is the absolute path of the file pod came from, or "" when it
// did not come from a manifest file.
func sourceFile(pod *v1.Pod) string {
	path, ok := strings.CutPrefix(pod.Annotations[SourceAnnotation], sourcePrefix)
	if !ok || !filepath.IsAbs(path) {
		return ""
	}
	return filepath.Clean(path)
}
