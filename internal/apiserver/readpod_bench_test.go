package apiserver

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/model/modeltest"
)

// BenchmarkReadPod is what the agent spends on the body of a create before
// it admits the pod: reading and decoding it (readPod), then validating
// it. The CLI sends JSON; a manifest at the limit (model.MaxManifestBytes)
// is decoded, a bigger one (here 4 MiB) is refused unread:
//
//	go test -run '^$' -bench ReadPod -benchmem ./internal/apiserver/
func BenchmarkReadPod(b *testing.B) {
	yamlBody := modeltest.ManyContainers(model.MaxManifestBytes - 1024)
	jsonBody := jsonOf(b, modeltest.ManyContainers, model.MaxManifestBytes)
	bigJSON := jsonOf(b, modeltest.ManyContainers, 4<<20)
	for _, tc := range []struct {
		name, contentType string
		body              []byte
	}{
		{"json-limit", "application/json", jsonBody},
		{"yaml-limit", "application/yaml", yamlBody},
		{"json-4MiB", "application/json", bigJSON},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			modeltest.Loop(b, func() {
				r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(tc.body))
				r.Header.Set("Content-Type", tc.contentType)
				pod, err := readPod(httptest.NewRecorder(), r, "default", "")
				var tooBig *http.MaxBytesError
				switch {
				case len(tc.body) > model.MaxManifestBytes:
					if !errors.As(err, &tooBig) {
						b.Fatalf("a body over the limit: %v", err)
					}
				case err != nil:
					b.Fatal(err)
				default:
					if errs := model.Validate(pod); len(errs) > 0 {
						b.Fatal(model.FormatErrors(errs))
					}
				}
			})
		})
	}
}

// jsonOf is the JSON of a manifest of gen, as big as fits in limit bytes.
func jsonOf(b *testing.B, gen func(int) []byte, limit int) []byte {
	b.Helper()
	for size := limit; size > 0; size -= limit / 64 {
		js, err := yaml.YAMLToJSON(gen(size))
		if err != nil {
			b.Fatal(err)
		}
		if len(js) <= limit {
			return js
		}
		size = size * limit / len(js)
	}
	b.Fatal("no manifest fits")
	return nil
}
