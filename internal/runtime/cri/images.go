package cri

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// dockerHub is the registry of image names without a host.
const dockerHub = "docker.io"

// NormalizeImage returns the fully qualified name of image, as Kubernetes
// and the CRI runtimes read it: a name without a registry host is on
// docker.io, a single-component docker.io name is under library/, and a
// name with neither tag nor digest gets the tag latest ("busybox" is
// "docker.io/library/busybox:latest"). index.docker.io is docker.io.
func NormalizeImage(image string) (string, error) {
	ref, err := parseImage(image)
	if err != nil {
		return "", err
	}
	return ref.String(), nil
}

// imageRef is a parsed image name.
type imageRef struct {
	host   string // registry host[:port]
	repo   string // path in the registry, such as library/busybox
	tag    string
	digest string
}

func (r imageRef) String() string {
	s := r.host + "/" + r.repo
	if r.tag != "" {
		s += ":" + r.tag
	}
	if r.digest != "" {
		s += "@" + r.digest
	}
	return s
}

func parseImage(image string) (imageRef, error) {
	bad := func(why string) (imageRef, error) {
		return imageRef{}, fmt.Errorf("invalid image name %q: %s", image, why)
	}
	if image == "" {
		return bad("empty")
	}
	if strings.Contains(image, "://") || strings.ContainsAny(image, " \t\n") {
		return bad("not a reference")
	}
	var ref imageRef
	name, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest {
		if !strings.Contains(digest, ":") {
			return bad("malformed digest")
		}
		ref.digest = digest
	}
	// A first component is a host when it looks like one: a dot, a port,
	// localhost, or an upper-case letter (never in a repository path).
	first, rest, hasSlash := strings.Cut(name, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first) {
		ref.host, name = first, rest
	} else {
		ref.host = dockerHub
	}
	if ref.host == "index.docker.io" {
		ref.host = dockerHub
	}
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i:], "/") {
		ref.tag, name = name[i+1:], name[:i]
		if ref.tag == "" {
			return bad("empty tag")
		}
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		return bad("malformed repository")
	}
	if strings.ToLower(name) != name {
		return bad("repository name must be lowercase")
	}
	if ref.host == dockerHub && !strings.Contains(name, "/") {
		name = "library/" + name
	}
	ref.repo = name
	if ref.tag == "" && ref.digest == "" {
		ref.tag = "latest"
	}
	return ref, nil
}

// registryHost is a registry host as credentials name it, with Docker
// Hub's aliases made one.
func registryHost(host string) string {
	switch host {
	case "docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return dockerHub
	}
	return host
}

// ImagePresent says whether the CRI runtime has the image (normalized
// with NormalizeImage).
func (r *Runtime) ImagePresent(ctx context.Context, image string) (bool, error) {
	name, err := NormalizeImage(image)
	if err != nil {
		return false, err
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.img.ImageStatus(cctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: name}})
	if err != nil {
		return false, fmt.Errorf("image status of %s: %w", name, err)
	}
	return resp.GetImage() != nil, nil
}

// PullImage pulls the image (normalized with NormalizeImage) with the
// pod's pull credentials: the entries of its imagePullSecrets (Secrets of
// its namespace, or files of Config.PullSecretsDir: pullSecrets) that
// match the image's registry, tried in order until one works, or none when
// no entry matches. It returns the runtime's reference to the image, its
// size and how long the pull took (by the Config.Clock). It is bounded by
// Config.PullTimeout. A pull secret found nowhere is a Warning of the pod
// and the pull goes on without it; a malformed one is an error naming it,
// before any pull.
func (r *Runtime) PullImage(ctx context.Context, pod *model.Pod, image string) (runtime.PulledImage, error) {
	ref, err := parseImage(image)
	if err != nil {
		return runtime.PulledImage{}, err
	}
	name := ref.String()
	auths, err := credentials(r.pullSecrets(ctx, pod), ref)
	if err != nil {
		return runtime.PulledImage{}, fmt.Errorf("pull image %s for pod %s: %w", name, pod.Key(), err)
	}
	if len(auths) == 0 {
		auths = []credential{{}}
	}
	start := r.clock.Now()
	var imageRef string
	var errs []error
	for _, c := range auths {
		pctx, cancel := context.WithTimeout(ctx, r.pullTimeout)
		resp, err := r.img.PullImage(pctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: name}, Auth: c.auth})
		cancel()
		if err == nil {
			imageRef = resp.ImageRef
			break
		}
		if c.auth != nil {
			// The secret and its entry, never the user name: this error
			// becomes the pod's Failed event, which any reader of the
			// namespace's events sees (issue 22, item 4).
			err = fmt.Errorf("with image pull secret %q, entry %q: %w", c.secret, c.key, err)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if imageRef == "" {
		return runtime.PulledImage{}, fmt.Errorf("pull image %s: %w", name, errors.Join(errs...))
	}
	pulled := runtime.PulledImage{Ref: imageRef, Duration: r.clock.Since(start)}
	cctx, cancel := r.call(ctx)
	defer cancel()
	st, err := r.img.ImageStatus(cctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: imageRef}})
	if err != nil {
		return pulled, fmt.Errorf("image status of %s after its pull: %w", name, err)
	}
	pulled.Size = st.GetImage().GetSize()
	return pulled, nil
}

// dockerConfig is a dockerconfigjson secret's content; a legacy .dockercfg
// (the auths map alone) is read too.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// credential is one entry of a pull secret: the auth sent with the pull,
// and, for errors, the secret's name and the entry's key (a registry, not
// a user).
type credential struct {
	auth   *runtimeapi.AuthConfig // nil: an anonymous pull
	secret string
	key    string
}

// credentials are the entries of the pull secrets that match ref's
// registry: secret by secret in order, the most specific key (the longest
// path) first within a secret, then by key.
func credentials(secrets []pullSecret, ref imageRef) ([]credential, error) {
	var out []credential
	for _, s := range secrets {
		auths, err := parseDockerConfig(s.data)
		if err != nil {
			return nil, fmt.Errorf("image pull secret %q (%s): %w", s.name, s.source, err)
		}
		type match struct {
			specificity int
			key         string
			auth        *runtimeapi.AuthConfig
		}
		var matches []match
		for key, a := range auths {
			host, prefix := parseAuthKey(key)
			if !hostMatches(host, ref.host) || !pathMatches(prefix, ref.repo) {
				continue
			}
			cfg, err := authConfig(a, host)
			if err != nil {
				return nil, fmt.Errorf("image pull secret %q (%s): entry %q: %w", s.name, s.source, key, err)
			}
			matches = append(matches, match{specificity: len(prefix), key: key, auth: cfg})
		}
		slices.SortFunc(matches, func(a, b match) int {
			return cmp.Or(cmp.Compare(b.specificity, a.specificity), cmp.Compare(a.key, b.key))
		})
		for _, m := range matches {
			out = append(out, credential{auth: m.auth, secret: s.name, key: m.key})
		}
	}
	return out, nil
}

func parseDockerConfig(data []byte) (map[string]dockerAuth, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("not a dockerconfigjson: %w", err)
	}
	if cfg.Auths != nil {
		return cfg.Auths, nil
	}
	var legacy map[string]dockerAuth
	if err := json.Unmarshal(data, &legacy); err != nil {
		return nil, fmt.Errorf("not a dockerconfigjson: no \"auths\"")
	}
	return legacy, nil
}

// parseAuthKey splits a credentials key such as "https://index.docker.io/v1/"
// or "registry:5000/team" into its registry host and repository path
// prefix. The API version paths /v1 and /v2 are not repository paths.
func parseAuthKey(key string) (host, prefix string) {
	if _, rest, ok := strings.Cut(key, "://"); ok {
		key = rest
	}
	host, prefix, _ = strings.Cut(strings.TrimSuffix(key, "/"), "/")
	if prefix == "v1" || prefix == "v2" {
		prefix = ""
	}
	return registryHost(host), prefix
}

// hostMatches says whether a key's host, which may use * for one DNS
// label (*.example.com), matches the image's host.
func hostMatches(pattern, host string) bool {
	host = registryHost(host)
	if pattern == host {
		return true
	}
	if !strings.Contains(pattern, "*") {
		return false
	}
	pl, hl := strings.Split(pattern, "."), strings.Split(host, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if ok, _ := path.Match(pl[i], hl[i]); !ok {
			return false
		}
	}
	return true
}

// pathMatches says whether a key's path prefix covers the repository, a
// whole path component at a time.
func pathMatches(prefix, repo string) bool {
	return prefix == "" || repo == prefix || strings.HasPrefix(repo, prefix+"/")
}

func authConfig(a dockerAuth, host string) (*runtimeapi.AuthConfig, error) {
	cfg := &runtimeapi.AuthConfig{
		Username: a.Username, Password: a.Password, ServerAddress: host,
		IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
	}
	if a.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return nil, fmt.Errorf("auth is not base64: %w", err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, errors.New("auth is not base64(username:password)")
		}
		cfg.Username, cfg.Password = user, pass
	}
	if cfg.Username == "" && cfg.IdentityToken == "" && cfg.RegistryToken == "" {
		return nil, errors.New("no auth, username, identitytoken or registrytoken")
	}
	return cfg, nil
}
