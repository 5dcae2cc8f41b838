package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// defaultTokenExpiration is a serviceAccountToken's expirationSeconds when
// the spec has none, as the API server defaults it.
const defaultTokenExpiration = 3600

// projectedFiles adds each source of a projected volume to p, in order.
func projectedFiles(ctx context.Context, in Input, p hostfs.Payload, proj *v1.ProjectedVolumeSource) error {
	def := mode(proj.DefaultMode)
	for _, src := range proj.Sources {
		var err error
		switch {
		case src.ConfigMap != nil:
			err = configMapFiles(ctx, in, p, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, def)
		case src.Secret != nil:
			err = secretFiles(ctx, in, p, src.Secret.Name, src.Secret.Items, src.Secret.Optional, def)
		case src.DownwardAPI != nil:
			err = downwardFiles(in, p, src.DownwardAPI.Items, def)
		case src.ServiceAccountToken != nil:
			err = tokenFile(ctx, in, p, src.ServiceAccountToken, def)
		default:
			err = errors.New("unsupported projected volume source")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tokenFile adds a service account token bound to the pod, minted through
// in.Objects.Tokens; the token the volume holds now is passed on, so that
// a fresh one is used again rather than requested anew.
func tokenFile(ctx context.Context, in Input, p hostfs.Payload, src *v1.ServiceAccountTokenProjection, def fs.FileMode) error {
	if in.Objects.Tokens == nil {
		return errors.New("serviceAccountToken: nothing can mint service account tokens here")
	}
	sa := in.Pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	exp := int64(defaultTokenExpiration)
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	tok, err := in.Objects.Tokens.Token(ctx, objects.TokenRequest{
		Pod:               in.Pod,
		ServiceAccount:    sa,
		Audience:          src.Audience,
		ExpirationSeconds: exp,
		Current:           in.current(src.Path),
	})
	if err != nil {
		return fmt.Errorf("failed to fetch token: %w", err)
	}
	// As the kubelet: a token readable by the pod's one user (and its
	// fsGroup, which Setup adds), else defaultMode.
	f := hostfs.File{Data: []byte(tok.Token), Mode: def}
	if u, g := fsUser(in.Pod), fsGroup(in.Pod); u != nil || g != nil {
		f.Mode, f.UID = 0o600, u
	}
	p[src.Path] = f
	return nil
}
