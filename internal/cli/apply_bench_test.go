package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/model/modeltest"
)

// BenchmarkApplyRead is what `podward apply -f FILE` spends before it talks
// to the agent: reading and decoding the manifest (readApplied), then
// encoding each pod for its request. A manifest at the limit
// (model.MaxManifestBytes) is decoded, a bigger one is refused unread:
//
//	go test -run '^$' -bench ApplyRead -benchmem ./internal/cli/
func BenchmarkApplyRead(b *testing.B) {
	dir := b.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"yaml-limit", modeltest.ManyContainers(model.MaxManifestBytes - 1024)},
		{"yaml-4MiB", modeltest.ManyContainers(4 << 20)},
		{"env-100k", modeltest.EnvEntries(100_000)},
	} {
		file := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(file, tc.data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			s := Streams{In: strings.NewReader("")}
			modeltest.Loop(b, func() {
				docs, err := readApplied(s, []string{file})
				if len(tc.data) > model.MaxManifestBytes {
					if err == nil {
						b.Fatal("a manifest over the limit was read")
					}
					return
				}
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range docs.Pods {
					if _, err := json.Marshal(d.Pod.Pod); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
