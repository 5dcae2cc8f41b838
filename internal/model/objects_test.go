package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const cmYAML = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: "1"}
binaryData: {b: AAE=}
`

func TestDecodeManifestTakesObjectsInAnyOrder(t *testing.T) {
	in := `apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: other}
data: {user: YWRtaW4=}
stringData: {user: root, pass: x}
---
` + cmYAML
	m, err := DecodeManifest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 1 || len(m.Objects) != 2 {
		t.Fatalf("got %d pods, %d objects, want 1 and 2", len(m.Pods), len(m.Objects))
	}
	s := m.Objects[0].Secret
	if s == nil || s.Namespace != "other" || m.Objects[0].Namespace != "other" {
		t.Fatalf("first object = %+v, want Secret other/s", m.Objects[0])
	}
	// stringData wins over data and is dropped, as the API server merges it.
	if string(s.Data["user"]) != "root" || string(s.Data["pass"]) != "x" || s.StringData != nil {
		t.Errorf("secret data = %q, stringData %v", s.Data, s.StringData)
	}
	if s.Type != v1.SecretTypeOpaque {
		t.Errorf("type = %q, want Opaque", s.Type)
	}
	cm := m.Objects[1].ConfigMap
	if cm == nil || cm.Namespace != "default" || m.Objects[1].Namespace != "" || string(cm.BinaryData["b"]) != "\x00\x01" {
		t.Errorf("config map = %+v (written namespace %q)", cm, m.Objects[1].Namespace)
	}
}

func TestDecodeManifestList(t *testing.T) {
	in := `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: i}]}}
`
	m, err := DecodeManifest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 1 || len(m.Objects) != 1 || m.Objects[0].ConfigMap.Name != "a" {
		t.Fatalf("got %+v", m)
	}
	_, err = DecodeManifest([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: a}}\n"))
	if err == nil || err.Error() != `items[0]: kind "Service" is not supported: podward runs Pods, ConfigMaps and Secrets` {
		t.Fatalf("err = %v", err)
	}
}

func TestDecodeDocumentsRefusesObjects(t *testing.T) {
	_, err := DecodeDocuments([]byte(cmYAML))
	if err == nil || !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), `kind "ConfigMap" is not supported here`) {
		t.Fatalf("err = %v", err)
	}
}

func TestDecodeManifestValidatesObjects(t *testing.T) {
	big := strings.Repeat("x", MaxObjectDataBytes)
	tests := map[string]struct {
		in   string
		want []string
	}{
		"bad name": {
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n",
			want: []string{`metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`},
		},
		"bad keys": {
			in: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {bad key: x, dup: \"y\"}\nbinaryData: {dup: AA==, \"a/b\": AA==}\n",
			want: []string{
				`data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters`,
				`data[dup]: Invalid value: "dup": duplicate of key present in binaryData`,
				`binaryData[a/b]: Invalid value: "a/b": a valid config key`,
			},
		},
		"config map too big": {
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: " + big + ", b: x}\n",
			want: []string{`Too long: may not be more than 1048576 bytes`},
		},
		"secret too big": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\nstringData: {a: " + big + ", b: x}\n",
			want: []string{`data: Too long: may not be more than 1048576 bytes`},
		},
		"secret bad key": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\nstringData: {\"..x\": \"v\"}\n",
			want: []string{`data[..x]: Invalid value: "..x": must not start with '..'`},
		},
		"dockerconfigjson": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/dockerconfigjson\n",
			want: []string{`data[.dockerconfigjson]: Required value`},
		},
		"dockerconfigjson not json": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: nope}\n",
			want: []string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character`},
		},
		"dockercfg": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/dockercfg\n",
			want: []string{`data[.dockercfg]: Required value`},
		},
		"basic-auth": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/basic-auth\n",
			want: []string{`data[username]: Required value`, `data[password]: Required value`},
		},
		"ssh-auth": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/ssh-auth\n",
			want: []string{`data[ssh-privatekey]: Required value`},
		},
		"tls": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/tls\nstringData: {tls.crt: x}\n",
			want: []string{`data[tls.key]: Required value`},
		},
		"service-account-token": {
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/service-account-token\n",
			want: []string{`metadata.annotations[kubernetes.io/service-account.name]: Required value`},
		},
		"unknown field": {
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndatta: {}\n",
			want: []string{`datta: unknown field`},
		},
		"bad apiVersion": {
			in:   "apiVersion: v2\nkind: Secret\nmetadata: {name: a}\n",
			want: []string{`apiVersion "v2" is not supported: a Secret is "apiVersion: v1"`},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeManifest([]byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("error:\n%v\nwant %d problems", err, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestValidSecretTypes(t *testing.T) {
	for _, in := range []string{
		"type: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: '{}'}",
		"type: kubernetes.io/basic-auth\nstringData: {username: u}",
		"type: kubernetes.io/tls\nstringData: {tls.crt: c, tls.key: k}",
		"type: example.com/custom",
	} {
		if _, err := DecodeManifest([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\n" + in + "\n")); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func TestImmutableUpdates(t *testing.T) {
	yes := true
	old := &v1.ConfigMap{Immutable: &yes, Data: map[string]string{"a": "1"}}
	old.Name, old.Namespace = "a", "default"
	cm := old.DeepCopy()
	cm.Data["a"] = "2"
	errs := ValidateConfigMapUpdate(cm, old)
	if len(errs) != 1 || errs[0].Error() != "data: Forbidden: field is immutable when `immutable` is set" {
		t.Errorf("errs = %v", errs)
	}
	cm = old.DeepCopy()
	cm.Immutable = nil
	if errs := ValidateConfigMapUpdate(cm, old); len(errs) != 1 || errs[0].Field != "immutable" {
		t.Errorf("errs = %v", errs)
	}
	if errs := ValidateConfigMapUpdate(old.DeepCopy(), old); len(errs) != 0 {
		t.Errorf("errs = %v", errs)
	}

	olds := &v1.Secret{Immutable: &yes, Type: v1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("1")}}
	olds.Name, olds.Namespace = "a", "default"
	s := olds.DeepCopy()
	s.Data["a"] = []byte("2")
	s.Type = "x"
	errs = ValidateSecretUpdate(s, olds)
	if len(errs) != 2 || errs[0].Field != "type" || errs[1].Field != "data" {
		t.Errorf("errs = %v", errs)
	}
}

func TestEmptyListIsNoPods(t *testing.T) {
	_, err := DecodeManifest([]byte("apiVersion: v1\nkind: List\nitems: []\n"))
	if !errors.Is(err, ErrNoPods) || !errors.Is(err, ErrInvalidManifest) {
		t.Fatalf("err = %v, want ErrNoPods", err)
	}
}

// FuzzDecodeManifest feeds DecodeManifest anything: it refuses it with
// ErrInvalidManifest, or returns objects that pass their validation and
// read back alike through JSON.
func FuzzDecodeManifest(f *testing.F) {
	for _, seed := range []string{
		cmYAML,
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/tls\nstringData: {tls.crt: a, tls.key: b}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"data":{"a":"AA=="}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidManifest) || m != nil {
				t.Fatalf("DecodeManifest = %v, %v; want nothing and ErrInvalidManifest", m, err)
			}
			return
		}
		for _, o := range m.Objects {
			var errs []error
			if o.Secret != nil {
				for _, e := range ValidateSecret(o.Secret) {
					errs = append(errs, e)
				}
			} else {
				for _, e := range ValidateConfigMap(o.ConfigMap) {
					errs = append(errs, e)
				}
			}
			if len(errs) > 0 {
				t.Fatalf("a decoded %s does not validate: %v", o.Kind(), errs)
			}
			var obj any = o.ConfigMap
			if o.Secret != nil {
				obj = o.Secret
			}
			js, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeManifest(js)
			if err != nil || len(back.Objects) != 1 {
				t.Fatalf("the decoded %s, as JSON, does not decode: %v\n%s", o.Kind(), err, js)
			}
		}
	})
}
