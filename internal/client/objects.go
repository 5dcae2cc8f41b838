package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	v1 "k8s.io/api/core/v1"
)

// The resources of the objects a standalone agent holds.
const (
	configMapsResource = "configmaps"
	secretsResource    = "secrets"
)

func objectsPath(resource, ns string) string {
	if ns == "" {
		return "/api/v1/" + resource
	}
	return "/api/v1/namespaces/" + url.PathEscape(ns) + "/" + resource
}

func objectPath(resource, ns, name string) string {
	return objectsPath(resource, ns) + "/" + url.PathEscape(name)
}

// ListConfigMaps lists the ConfigMaps of ns ("" for every namespace).
func (c *Client) ListConfigMaps(ctx context.Context, ns string) (*v1.ConfigMapList, error) {
	var list v1.ConfigMapList
	if _, err := c.call(ctx, request{method: http.MethodGet, path: objectsPath(configMapsResource, ns)}, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// ListSecrets lists the Secrets of ns ("" for every namespace).
func (c *Client) ListSecrets(ctx context.Context, ns string) (*v1.SecretList, error) {
	var list v1.SecretList
	if _, err := c.call(ctx, request{method: http.MethodGet, path: objectsPath(secretsResource, ns)}, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// GetConfigMap reads one ConfigMap.
func (c *Client) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	var out v1.ConfigMap
	if _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(configMapsResource, ns, name)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSecret reads one Secret.
func (c *Client) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	var out v1.Secret
	if _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(secretsResource, ns, name)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ApplyConfigMap creates cm, replaces the ConfigMap of its name when it
// differs, or leaves it; it returns the ConfigMap as it is now.
func (c *Client) ApplyConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, ApplyResult, error) {
	var out v1.ConfigMap
	res, err := c.applyObject(ctx, objectPath(configMapsResource, cm.Namespace, cm.Name), cm, &out)
	if err != nil {
		return nil, "", err
	}
	return &out, res, nil
}

// ApplySecret creates s, replaces the Secret of its name when it differs,
// or leaves it; it returns the Secret as it is now.
func (c *Client) ApplySecret(ctx context.Context, s *v1.Secret) (*v1.Secret, ApplyResult, error) {
	var out v1.Secret
	res, err := c.applyObject(ctx, objectPath(secretsResource, s.Namespace, s.Name), s, &out)
	if err != nil {
		return nil, "", err
	}
	return &out, res, nil
}

func (c *Client) applyObject(ctx context.Context, path string, obj, out any) (ApplyResult, error) {
	body, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encode object: %w", err)
	}
	h, err := c.call(ctx, request{method: http.MethodPatch, path: path, body: body, contentType: applyContentType}, out)
	if err != nil {
		return "", err
	}
	return ApplyResult(h.Get(applyResultHeader)), nil
}

// DeleteConfigMap deletes a ConfigMap and returns it as it was.
func (c *Client) DeleteConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	var out v1.ConfigMap
	if _, err := c.call(ctx, request{method: http.MethodDelete, path: objectPath(configMapsResource, ns, name)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSecret deletes a Secret and returns it as it was.
func (c *Client) DeleteSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	var out v1.Secret
	if _, err := c.call(ctx, request{method: http.MethodDelete, path: objectPath(secretsResource, ns, name)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
