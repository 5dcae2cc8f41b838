package cri

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                                 "docker.io/library/busybox:latest",
		"busybox:1.36":                            "docker.io/library/busybox:1.36",
		"library/busybox":                         "docker.io/library/busybox:latest",
		"user/app":                                "docker.io/user/app:latest",
		"docker.io/busybox":                       "docker.io/library/busybox:latest",
		"index.docker.io/library/busybox:1":       "docker.io/library/busybox:1",
		"localhost/busybox:local":                 "localhost/busybox:local",
		"localhost:5000/team/app":                 "localhost:5000/team/app:latest",
		"registry.example.com/app:v1":             "registry.example.com/app:v1",
		"registry.example.com:443/a/b/c:v1":       "registry.example.com:443/a/b/c:v1",
		"busybox@sha256:abc":                      "docker.io/library/busybox@sha256:abc",
		"busybox:1@sha256:abc":                    "docker.io/library/busybox:1@sha256:abc",
		"quay.io/prometheus/node-exporter:v1.8.2": "quay.io/prometheus/node-exporter:v1.8.2",
		"Registry/app":                            "Registry/app:latest",
		"ghcr.io/x/y":                             "ghcr.io/x/y:latest",
	} {
		got, err := NormalizeImage(in)
		if err != nil || got != want {
			t.Errorf("NormalizeImage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Busybox", "http://registry/app", "busybox:", "a//b", "busybox@abc", "with space"} {
		if got, err := NormalizeImage(bad); err == nil {
			t.Errorf("NormalizeImage(%q) = %q, want an error", bad, got)
		}
	}
}

func basicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func TestCredentials(t *testing.T) {
	contents := map[string]string{
		"hub":      `{"auths":{"https://index.docker.io/v1/":{"auth":"` + basicAuth("hubuser", "hubpass") + `"}}}`,
		"hub2":     `{"auths":{"registry-1.docker.io":{"username":"u2","password":"p2"}}}`,
		"local":    `{"auths":{"localhost:5000":{"auth":"` + basicAuth("local", "secret") + `"},"localhost:5000/team":{"username":"team","password":"t"}}}`,
		"wildcard": `{"auths":{"*.example.com":{"username":"w","password":"x"}}}`,
		"legacy":   `{"quay.io":{"auth":"` + basicAuth("q", "r") + `"}}`,
		"token":    `{"auths":{"ghcr.io":{"identitytoken":"tok"}}}`,
		"garbage":  `{"auths":{"ghcr.io":{"auth":"!!!"}}}`,
		"notjson":  `nope`,
	}
	secrets := func(names []string) []pullSecret {
		var out []pullSecret
		for _, n := range names {
			out = append(out, pullSecret{name: n, source: n + ".json", data: []byte(contents[n])})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		image   string
		secrets []string
		want    []string // user@server, in order
		err     string
	}{
		{name: "docker hub by its legacy key", image: "busybox", secrets: []string{"hub"}, want: []string{"hubuser@docker.io"}},
		{name: "docker hub aliases", image: "index.docker.io/library/busybox", secrets: []string{"hub2", "hub"}, want: []string{"u2@docker.io", "hubuser@docker.io"}},
		{name: "other registry does not match", image: "busybox", secrets: []string{"local"}},
		{name: "host and port", image: "localhost:5000/app", secrets: []string{"local"}, want: []string{"local@localhost:5000"}},
		{name: "most specific path first", image: "localhost:5000/team/app:v1", secrets: []string{"local"}, want: []string{"team@localhost:5000", "local@localhost:5000"}},
		{name: "path on a component boundary", image: "localhost:5000/teamster/app", secrets: []string{"local"}, want: []string{"local@localhost:5000"}},
		{name: "wildcard", image: "registry.example.com/app", secrets: []string{"wildcard"}, want: []string{"w@*.example.com"}},
		{name: "wildcard is one label", image: "a.registry.example.com/app", secrets: []string{"wildcard"}},
		{name: "legacy dockercfg", image: "quay.io/x/y", secrets: []string{"legacy"}, want: []string{"q@quay.io"}},
		{name: "identity token", image: "ghcr.io/x/y", secrets: []string{"token"}, want: []string{"@ghcr.io"}},
		{name: "bad auth", image: "ghcr.io/x/y", secrets: []string{"garbage"}, err: "auth is not base64"},
		{name: "not json", image: "ghcr.io/x/y", secrets: []string{"notjson"}, err: "not a dockerconfigjson"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := parseImage(tc.image)
			if err != nil {
				t.Fatal(err)
			}
			auths, err := credentials(secrets(tc.secrets), ref)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range auths {
				got = append(got, c.auth.Username+"@"+c.auth.ServerAddress)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("credentials = %q, want %q", got, tc.want)
			}
		})
	}
	// Passwords come through decoded.
	ref, _ := parseImage("busybox")
	auths, _ := credentials(secrets([]string{"hub"}), ref)
	if auths[0].auth.Password != "hubpass" {
		t.Fatalf("password = %q", auths[0].auth.Password)
	}
}

func TestPullImage(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.PullSecretsDir = dir })
	secret := `{"auths":{"docker.io":{"auth":"` + basicAuth("wrong", "x") + `"},"index.docker.io":{"username":"right","password":"y"}}}`
	if err := os.WriteFile(filepath.Join(dir, "regcred.json"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	h.f.mu.Lock()
	h.f.pullFn = func(req *runtimeapi.PullImageRequest) error {
		h.clk.Step(3 * time.Second) // the pull takes 3 s
		if req.Auth.GetUsername() != "right" {
			return errors.New("unauthorized")
		}
		return nil
	}
	h.f.mu.Unlock()
	ctx := context.Background()
	present, err := h.r.ImagePresent(ctx, "busybox")
	if err != nil || present {
		t.Fatalf("ImagePresent before the pull = %v, %v", present, err)
	}
	pod := testPod("uid-1")
	pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}}
	pulled, err := h.r.PullImage(ctx, pod, "busybox")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pulled.Ref, "sha256:") || pulled.Size != 4242 {
		t.Fatalf("pulled = %+v", pulled)
	}
	h.f.mu.Lock()
	pulls := h.f.pulls
	h.f.mu.Unlock()
	if len(pulls) != 2 || pulls[0].Image.Image != "docker.io/library/busybox:latest" {
		t.Fatalf("pulls = %v", pulls)
	}
	// Both entries match docker.io: tried in turn until one works; the
	// duration covers the whole pull.
	if pulled.Duration != 6*time.Second {
		t.Fatalf("duration = %v, want 6s", pulled.Duration)
	}
	if present, err := h.r.ImagePresent(ctx, "docker.io/library/busybox"); err != nil || !present {
		t.Fatalf("ImagePresent after the pull = %v, %v", present, err)
	}
	// A malformed secret fails before any pull.
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "bad"}}
	if _, err := h.r.PullImage(ctx, pod, "busybox"); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("pull with a malformed secret: %v", err)
	}
	if n := h.f.callCount("PullImage"); n != 2 {
		t.Fatalf("PullImage called %d times, want 2", n)
	}
	// All credentials failing is an error naming them.
	pod.Spec.ImagePullSecrets = nil
	h.f.mu.Lock()
	h.f.pullFn = func(*runtimeapi.PullImageRequest) error { return errors.New("not found") }
	h.f.mu.Unlock()
	if _, err := h.r.PullImage(ctx, pod, "nonexistent"); err == nil || !strings.Contains(err.Error(), "docker.io/library/nonexistent:latest") {
		t.Fatalf("failed pull: %v", err)
	}
}
