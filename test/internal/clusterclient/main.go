// Clusterclient is what test/cluster's add-ons test runs inside pods on
// the pod network (a static binary, CGO_ENABLED=0, mounted into a busybox
// container: busybox-static's wget crashes in glibc's static resolver):
//
//	clusterclient get URL N     GET URL N times (the host name resolved by
//	                            Go's own resolver through the pod's
//	                            /etc/resolv.conf); one line per answer, its
//	                            body. Until the first answer, errors are
//	                            retried for -within.
//	clusterclient list-pods     client-go's in-cluster config (the
//	                            service-account token, KUBERNETES_SERVICE_HOST
//	                            and _PORT): "pods: NAME..." of the pod's own
//	                            namespace, then "secrets: forbidden" or
//	                            "secrets: allowed" (what RBAC says about
//	                            listing secrets there).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	within := flag.Duration("within", time.Minute, "how long get retries until its first answer")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *within+time.Minute)
	defer cancel()
	var err error
	switch args := flag.Args(); {
	case len(args) == 3 && args[0] == "get":
		err = get(ctx, args[1], args[2], *within)
	case len(args) == 1 && args[0] == "list-pods":
		err = listPods(ctx)
	default:
		err = errors.New("usage: clusterclient [-within D] get URL N | list-pods")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clusterclient:", err)
		os.Exit(1)
	}
}

func get(ctx context.Context, url, count string, within time.Duration) error {
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return fmt.Errorf("bad count %q", count)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	first := time.NewTimer(within)
	defer first.Stop()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for answered := 0; answered < n; {
		body, err := getOnce(ctx, client, url)
		if err == nil {
			fmt.Println(body)
			answered++
			continue
		}
		if answered > 0 {
			return err
		}
		fmt.Fprintln(os.Stderr, "clusterclient: retrying:", err)
		select {
		case <-retry.C:
		case <-first.C:
			return fmt.Errorf("no answer within %v: %w", within, err)
		}
	}
	return nil
}

func getOnce(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return strings.TrimSpace(string(body)), nil
}

func listPods(ctx context.Context) error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster config: %w", err)
	}
	fmt.Println("host:", cfg.Host)
	ns, err := os.ReadFile(namespaceFile)
	if err != nil {
		return fmt.Errorf("the pod's namespace: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pods, err := client.CoreV1().Pods(string(ns)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods in %s: %w", ns, err)
	}
	names := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	fmt.Println("pods:", strings.Join(names, " "))
	_, err = client.CoreV1().Secrets(string(ns)).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		fmt.Println("secrets: forbidden")
	case err == nil:
		fmt.Println("secrets: allowed")
	default:
		return fmt.Errorf("list secrets in %s: %w", ns, err)
	}
	return nil
}
