package cluster

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

const authzPod = `
apiVersion: v1
kind: Pod
metadata:
  name: kubelet-authz
spec:
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "echo the secret; trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// TestKubeletPortAuthorization: the node's kubelet port serves a
// container's log only to users the API server allows get on nodes/proxy
// (RBAC, through a SubjectAccessReview), as the kubelet does with its
// default --authorization-mode=Webhook (kubelet 1.37,
// pkg/kubelet/server/auth.go: /containerLogs needs nodes/proxy, nodes/log
// is the node's own /logs/). The others get its 403, a client without
// credentials 401, and each request is in the node's audit log. kubectl
// logs still works: the API server's kubelet client is allowed as in a
// kubeadm cluster (system:kubelet-api-admin, hack/control-plane-up.sh).
func TestKubeletPortAuthorization(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	ca := loadClusterCA(t, c)
	suffix := randomSuffix(t)
	reader, logOnly, stranger := "podward-reader-"+suffix, "podward-log-only-"+suffix, "random-user-"+suffix
	c.bindNodesRole(t, reader, "proxy")
	c.bindNodesRole(t, logOnly, "log")

	n := startNode(t, c, nodeName(t, "a"))
	n.apply(t, authzPod)
	c.waitPod(t, "default", "kubelet-authz", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})
	// Through the API server, as its kubelet client.
	waitLogs(t, c, "the secret", "kubelet-authz", "-c", "app")

	forbidden := func(user string) string {
		return fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[proxy])\n", user)
	}
	tests := []struct {
		name        string
		cert        *tls.Certificate
		token       string
		code        int
		body        string
		auditUser   string
		auditResult string
	}{
		{name: "bound to nodes/proxy", cert: ca.clientCert(t, reader), code: 200, body: "the secret\n", auditUser: reader, auditResult: "allowed"},
		{name: "no role", cert: ca.clientCert(t, stranger), code: 403, body: forbidden(stranger), auditUser: stranger, auditResult: "forbidden"},
		{name: "bound to nodes/log only", cert: ca.clientCert(t, logOnly), code: 403, body: forbidden(logOnly), auditUser: logOnly, auditResult: "forbidden"},
		{name: "a certificate for system:anonymous", cert: ca.clientCert(t, "system:anonymous"), code: 403, body: forbidden("system:anonymous"), auditUser: "system:anonymous", auditResult: "forbidden"},
		{name: "no credentials", code: 401, body: "Unauthorized\n", auditUser: "", auditResult: "unauthenticated"},
		// A bearer token is reviewed by the API server (TokenReview).
		{name: "the admin's token", token: c.env["CP_ADMIN_TOKEN"], code: 200, body: "the secret\n", auditUser: "podward-admin-token", auditResult: "allowed"},
		{name: "a forged token", token: "forged-" + suffix, code: 401, body: "Unauthorized\n", auditUser: "", auditResult: "unauthenticated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := n.kubeletGet(t, "/containerLogs/default/kubelet-authz/app", tc.cert, tc.token)
			if code != tc.code || body != tc.body {
				t.Errorf("got %d %q, want %d %q", code, body, tc.code, tc.body)
			}
			user := tc.auditUser
			if user == "" {
				user = `""`
			}
			n.waitLogLine(t, `msg="kubelet API request" user=`+user+" ", "path=/containerLogs/default/kubelet-authz/app", "decision="+tc.auditResult)
		})
	}

	// The API server's kubelet client is allowed by RBAC, as in a kubeadm
	// cluster, not only by system:masters.
	sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: c.env["CP_KUBELET_CLIENT_CN"], Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: n.name},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sar.Status.Allowed {
		t.Errorf("%s may not get nodes/proxy without system:masters (%s): kubectl logs works only by that group; hack/control-plane-up.sh binds system:kubelet-api-admin as kubeadm does", c.env["CP_KUBELET_CLIENT_CN"], sar.Status.Reason)
	}
	// ...and its requests are audited too.
	n.waitLogLine(t, `msg="kubelet API request" user=`+c.env["CP_KUBELET_CLIENT_CN"]+` `, "decision=allowed")
	c.mustKubectl(t, "delete", "pod", "kubelet-authz", "--timeout", "60s")
}

// waitLogLine waits until a line of the node's log has every one of parts.
// The lines it waits for are written before the response they are about,
// so the deadline is short.
// kubeletGet GETs path on the node's kubelet port, trusting the node's
// serving certificate, as the client of cert (none: no client
// certificate) with the bearer token when one is given; it returns the
// status code and the body.
func (n *node) kubeletGet(t *testing.T, path string, cert *tls.Certificate, token string) (int, string) {
	t.Helper()
	serverCA := x509.NewCertPool()
	pemBytes, err := os.ReadFile(filepath.Join(n.root, "pki", "kubelet.crt"))
	if err != nil || !serverCA.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("the node's serving certificate: %v", err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: serverCA}}
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("https://127.0.0.1:%d%s", n.port, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: waitTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (n *node) waitLogLine(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		n.log.mu.Lock()
		text := n.log.b.String()
		if n.log.changed == nil {
			n.log.changed = make(chan struct{})
		}
		changed := n.log.changed
		n.log.mu.Unlock()
		for _, line := range strings.Split(text, "\n") {
			if containsAll(line, parts) {
				return
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no line of the node's log has %q", parts)
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func randomSuffix(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// bindNodesRole gives user get on nodes/subresource with a ClusterRole and
// its ClusterRoleBinding, removed when the test ends, and waits until the
// API server's authorizer says so: a node keeps a refusal 30 s.
func (c *controlPlane) bindNodesRole(t *testing.T, user, subresource string) {
	t.Helper()
	ctx := t.Context()
	name := user + "-nodes-" + subresource
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/" + subresource}, Verbs: []string{"get"}}},
	}
	if _, err := c.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.client.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// The authorizer learns of the binding through its informers.
	var reason string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: subresource},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		reason = sar.Status.Reason
		return sar.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("%s is still not allowed nodes/%s: %v (%s)", user, subresource, err, reason)
	}
}

// clusterCA signs client certificates, as the cluster's CA.
type clusterCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// loadClusterCA is the control plane's CA (CP_CA_FILE) with its key
// (CP_CA_KEY_FILE, else pki/ca.key of its base directory).
func loadClusterCA(t testing.TB, c *controlPlane) *clusterCA {
	t.Helper()
	keyFile := c.env["CP_CA_KEY_FILE"]
	if keyFile == "" {
		keyFile = filepath.Join(c.env["PODWARD_CP_BASE"], "pki", "ca.key")
	}
	certPEM, err := os.ReadFile(c.env["CP_CA_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		t.Fatalf("no PEM in %s or %s", c.env["CP_CA_FILE"], keyFile)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		if key, err = x509.ParseECPrivateKey(kb.Bytes); err != nil {
			t.Fatalf("%s: %v", keyFile, err)
		}
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		t.Fatalf("%s: a %T cannot sign", keyFile, key)
	}
	return &clusterCA{cert: cert, key: signer}
}

// clientCert is a client certificate for the user cn (no groups).
func (ca *clusterCA) clientCert(t *testing.T, cn string) *tls.Certificate {
	t.Helper()
	key, der := ca.issue(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// issue signs tmpl, given a fresh P-256 key, a random serial number, a
// day's validity (from an hour ago, for clocks a little apart) and
// digital-signature use, and returns the key and the certificate (DER).
func (ca *clusterCA) issue(t testing.TB, tmpl *x509.Certificate) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64)); err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}
