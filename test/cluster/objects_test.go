package cluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	toolswatch "k8s.io/client-go/tools/watch"

	"github.com/podward/podward/internal/clusterobjects"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
)

// These tests run the node's object managers and token manager in the test
// process, as the node's own identity (system:node:NAME of group
// system:nodes, minted with the cluster's CA): what the Node authorizer
// lets a kubelet read is what they may read.

// nodeIdentity registers a Node named name (removed at the end, with the
// pods bound to it) and returns a client that is that node.
func nodeIdentity(t testing.TB, cp *controlPlane, name string) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	if _, err := cp.client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		pods, _ := cp.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
		if pods != nil {
			for _, p := range pods.Items {
				_ = cp.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, *metav1.NewDeleteOptions(0))
			}
		}
		_ = cp.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	})
	ca := loadClusterCA(t, cp)
	key, der := ca.issue(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host: cp.env["CP_APISERVER_URL"],
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   cp.env["CP_CA_FILE"],
			CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			KeyData:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		},
		QPS: 50, Burst: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// namespace makes a namespace of the test (deleted at the end) and waits
// for its default ServiceAccount, which ServiceAccount admission needs.
func namespace(t testing.TB, cp *controlPlane, prefix string) string {
	t.Helper()
	ns, err := cp.client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	lw := cache.NewListWatchFromClient(cp.client.CoreV1().RESTClient(), "serviceaccounts", ns.Name, fields.OneTermEqualSelector("metadata.name", "default"))
	if _, err := toolswatch.UntilWithSync(ctx, lw, &v1.ServiceAccount{}, func(store cache.Store) (bool, error) {
		return len(store.List()) > 0, nil
	}, func(ev watch.Event) (bool, error) { return ev.Object != nil, nil }); err != nil {
		t.Fatalf("namespace %s: no default ServiceAccount within %v: %v", ns.Name, waitTimeout, err)
	}
	return ns.Name
}

// boundPod creates a pod of namespace ns bound to node (it never runs: no
// agent is there), changed by mod, and returns it as the agent sees it.
func boundPod(t testing.TB, cp *controlPlane, ns, node string, mod func(*v1.Pod)) *model.Pod {
	t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "objects-", Namespace: ns},
		Spec: v1.PodSpec{
			NodeName: node, AutomountServiceAccountToken: new(false),
			Containers: []v1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	if mod != nil {
		mod(p)
	}
	p, err := cp.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &model.Pod{Pod: p}
}

func configMapVolume(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}}}
}

// timedChanges records each Change with when it came.
type timedChange struct {
	objects.Change
	at time.Time
}

func startManagers(t testing.TB, client kubernetes.Interface) (*clusterobjects.Managers, chan timedChange) {
	t.Helper()
	changes := make(chan timedChange, 256)
	m := clusterobjects.New(context.Background(), clusterobjects.Config{Client: client, OnChange: func(c objects.Change) {
		select {
		case changes <- timedChange{c, time.Now()}:
		default:
		}
	}})
	t.Cleanup(m.Close)
	return m, changes
}

func TestObjectManagersAsANode(t *testing.T) {
	cp := needControlPlane(t)
	name := nodeName(t, randomSuffix(t))
	client := nodeIdentity(t, cp, name)
	ns := namespace(t, cp, "objects")
	ctx := t.Context()
	cms := cp.client.CoreV1().ConfigMaps(ns)
	for _, n := range []string{"referenced", "unreferenced"} {
		if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}, Data: map[string]string{"k": "0"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := boundPod(t, cp, ns, name, func(p *v1.Pod) { p.Spec.Volumes = []v1.Volume{configMapVolume("referenced")} })

	m, changes := startManagers(t, client)
	m.RegisterPod(pod)
	gctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	cm, err := m.ConfigMap(gctx, ns, "referenced")
	if err != nil || cm.Data["k"] != "0" {
		t.Fatalf("the node reads its pod's ConfigMap: %v, %v", cm, err)
	}

	// Each update reaches OnChange; the latency is from the update's call,
	// by a client that the client-side rate limit does not hold up.
	cms = unthrottled(t, cp).CoreV1().ConfigMaps(ns)
	var latencies []time.Duration
	for i := 1; i <= 10; i++ {
		cm = cm.DeepCopy()
		cm.Data["k"] = strings.Repeat("x", i)
		start := time.Now()
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c := waitChange(t, changes, objects.Change{Ref: objects.Ref{Kind: objects.KindConfigMap, Namespace: ns, Name: "referenced"}})
		latencies = append(latencies, c.at.Sub(start))
	}
	t.Logf("API update -> OnChange, in order: %v", latencies)
	slices.Sort(latencies)
	t.Logf("API update -> OnChange: median %v, min %v, max %v (%d updates)", latencies[len(latencies)/2], latencies[0], latencies[len(latencies)-1], len(latencies))
	if got, err := m.ConfigMap(gctx, ns, "referenced"); err != nil || got.Data["k"] != cm.Data["k"] {
		t.Errorf("ConfigMap after the updates = %v, %v", got, err)
	}

	// What no pod of the node references, the Node authorizer refuses.
	if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "unreferenced", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node reads an unreferenced ConfigMap: %v, want forbidden", err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=unreferenced"}); !apierrors.IsForbidden(err) {
		t.Errorf("the node lists an unreferenced ConfigMap: %v, want forbidden", err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node lists the namespace's ConfigMaps: %v, want forbidden", err)
	}

	// A missing object a pod references is the kubelet's not found.
	pod2 := boundPod(t, cp, ns, name, func(p *v1.Pod) { p.Spec.Volumes = []v1.Volume{configMapVolume("missing")} })
	m.RegisterPod(pod2)
	if _, err := m.ConfigMap(gctx, ns, "missing"); !apierrors.IsNotFound(err) || err.Error() != `configmap "missing" not found` {
		t.Errorf("ConfigMap of a missing object = %v, want not found", err)
	}
	m.UnregisterPod(pod)
	if _, err := m.ConfigMap(gctx, ns, "referenced"); err == nil {
		t.Error("ConfigMap of an object no registered pod references: no error")
	}
}

// unthrottled is an admin client without client-go's rate limit.
func unthrottled(t testing.TB, cp *controlPlane) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.env["KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// waitChange waits for want among the changes.
func waitChange(t testing.TB, changes <-chan timedChange, want objects.Change) timedChange {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case c := <-changes:
			if c.Change == want {
				return c
			}
		case <-deadline:
			t.Fatalf("no change %+v within %v", want, waitTimeout)
		}
	}
}

func TestObjectManagersPullSecretOfAnotherNamespace(t *testing.T) {
	cp := needControlPlane(t)
	name := nodeName(t, randomSuffix(t))
	client := nodeIdentity(t, cp, name)
	nsA, nsB := namespace(t, cp, "pull-a"), namespace(t, cp, "pull-b")
	ctx := t.Context()
	secret := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"username":"a","password":"p"}}}`)},
	}
	if _, err := cp.client.CoreV1().Secrets(nsA).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pulls := func(p *v1.Pod) { p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}} }
	podA, podB := boundPod(t, cp, nsA, name, pulls), boundPod(t, cp, nsB, name, pulls)

	m, _ := startManagers(t, client)
	m.RegisterPod(podA)
	m.RegisterPod(podB)
	gctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	if s, err := m.Secret(gctx, nsA, "regcred"); err != nil || s.Type != v1.SecretTypeDockerConfigJson {
		t.Fatalf("pod of %s reads its pull secret: %v, %v", nsA, s, err)
	}
	// The pod of namespace B names the same secret: it gets its own
	// namespace's, which does not exist, never A's.
	if s, err := m.Secret(gctx, nsB, "regcred"); !apierrors.IsNotFound(err) {
		t.Fatalf("pod of %s reads pull secret regcred: %v, %v; want not found", nsB, s, err)
	}
	// Once A's pod is gone, the node may not read A's secret at all.
	m.UnregisterPod(podA)
	if err := cp.client.CoreV1().Pods(nsA).Delete(ctx, podA.Name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	err := waitForbidden(ctx, func() error {
		_, err := client.CoreV1().Secrets(nsA).Get(ctx, "regcred", metav1.GetOptions{})
		return err
	})
	if err != nil {
		t.Errorf("the node reads %s's pull secret without a pod there: %v", nsA, err)
	}
}

// waitForbidden calls get until the API server forbids it: the Node
// authorizer's graph learns of a pod's deletion through its informers.
func waitForbidden(ctx context.Context, get func() error) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := get()
		if apierrors.IsForbidden(err) {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			if err == nil {
				return ctx.Err()
			}
			return err
		}
	}
}

func TestTokenManagerAsANode(t *testing.T) {
	cp := needControlPlane(t)
	name := nodeName(t, randomSuffix(t))
	client := nodeIdentity(t, cp, name)
	ctx := t.Context()
	ns := namespace(t, cp, "tokens")
	// The Node authorizer lets a node request a token of an audience
	// (the API server's own too) only when a pod of the node asks for it in
	// a volume.
	pod := boundPod(t, cp, ns, name, func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "podward-test", ExpirationSeconds: new(int64(3600))}},
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "api-token", ExpirationSeconds: new(int64(3600))}},
		}}}}}
	})
	tm := clusterobjects.NewTokenManager(clusterobjects.TokenConfig{Client: client})
	t.Cleanup(tm.Close)
	req := objects.TokenRequest{Pod: pod, ServiceAccount: "default", Audience: "podward-test", ExpirationSeconds: 3600}
	tctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	tok, err := tm.Token(tctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if life := time.Until(tok.Expires); life < 59*time.Minute || life > 61*time.Minute {
		t.Errorf("token expires in %v, want an hour", life)
	}
	review := func(token string, audiences ...string) *authenticationv1.TokenReviewStatus {
		t.Helper()
		r, err := cp.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return &r.Status
	}
	st := review(tok.Token, "podward-test")
	if !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":default" {
		t.Fatalf("token review: %+v", st)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || got[0] != string(pod.UID) {
		t.Errorf("token bound to pod uid %v, want %s", got, pod.UID)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != pod.Name {
		t.Errorf("token bound to pod %v, want %s", got, pod.Name)
	}
	if st := review(tok.Token); st.Authenticated {
		t.Error("a token of audience podward-test is taken by the API server's own audience")
	}
	// No audience: the API server's own.
	req.Audience = ""
	plain, err := tm.Token(tctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if st := review(plain.Token); !st.Authenticated {
		t.Errorf("token without audience: not authenticated by the API server: %+v", st)
	}
	// A restarted agent passes the token its volume holds: it is used
	// again, not requested anew.
	tm2 := clusterobjects.NewTokenManager(clusterobjects.TokenConfig{Client: client})
	t.Cleanup(tm2.Close)
	req.Current = plain.Token
	again, err := tm2.Token(tctx, req)
	if err != nil || again.Token != plain.Token {
		t.Errorf("Token with the current token fresh = %v, want it again", err)
	}
	// A pod bound to another node gets no token from this one.
	other := boundPod(t, cp, ns, name+"-other", nil)
	t.Cleanup(func() {
		_ = cp.client.CoreV1().Pods(ns).Delete(context.Background(), other.Name, *metav1.NewDeleteOptions(0))
	})
	// The API server refuses it as forbidden, or, while its
	// NodeRestriction admission has yet to see the pod just created, as
	// not found: either way no token.
	if _, err := tm.Token(tctx, objects.TokenRequest{Pod: other, ServiceAccount: "default", ExpirationSeconds: 3600}); !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
		t.Errorf("token for another node's pod: %v, want forbidden (or not found)", err)
	}
}

// BenchmarkConfigMapUpdateToOnChange is the node's side of the update
// latency: from an update of a ConfigMap a pod of the node references, at
// the API server, to the node's managers telling of it (OnChange, which
// the agent turns into a rewrite of the pod's volumes:
// BenchmarkObjectChangedToRefresh in internal/agent, the write itself
// BenchmarkRefreshVolumes in internal/runtime/process). Run with
// hack/with-control-plane.sh go test -run X -bench ConfigMapUpdateToOnChange ./test/cluster/
func BenchmarkConfigMapUpdateToOnChange(b *testing.B) {
	cp := needControlPlane(b)
	name := nodeName(b, randomSuffix(b))
	client := nodeIdentity(b, cp, name)
	ns := namespace(b, cp, "bench")
	ctx := b.Context()
	cms := unthrottled(b, cp).CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}, Data: map[string]string{"k": "0"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pod := boundPod(b, cp, ns, name, func(p *v1.Pod) { p.Spec.Volumes = []v1.Volume{configMapVolume("watched")} })
	m, changes := startManagers(b, client)
	m.RegisterPod(pod)
	gctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	if _, err := m.ConfigMap(gctx, ns, "watched"); err != nil {
		b.Fatal(err)
	}
	want := objects.Change{Ref: objects.Ref{Kind: objects.KindConfigMap, Namespace: ns, Name: "watched"}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cm = cm.DeepCopy()
		cm.Data["k"] = strconv.Itoa(i + 1)
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitChange(b, changes, want)
	}
}
