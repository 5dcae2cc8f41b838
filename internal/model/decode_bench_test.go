package model

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/podward/podward/internal/model/modeltest"
)

// BenchmarkDecodeValidate is the cost of a big manifest on the decode,
// default and validate path, in YAML and in JSON (what the CLI sends the
// agent):
//
//	go test -run '^$' -bench DecodeValidate -benchmem ./internal/model/
//
// 4 MiB is more than a manifest may be (MaxManifestBytes): what Decode
// would cost if nothing bounded its input.
func BenchmarkDecodeValidate(b *testing.B) {
	const size = 4 << 20
	for _, shape := range []struct {
		name string
		yaml []byte
	}{
		{"containers", modeltest.ManyContainers(size)},
		{"env", modeltest.BigEnv(size)},
	} {
		js, err := yaml.YAMLToJSON(shape.yaml)
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range []struct {
			format string
			data   []byte
		}{{"yaml", shape.yaml}, {"json", js}} {
			b.Run(shape.name+"/"+in.format, func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				modeltest.Loop(b, func() {
					pods, err := Decode(in.data)
					if err != nil {
						b.Fatal(err)
					}
					if errs := Validate(pods[0]); len(errs) > 0 {
						b.Fatal(FormatErrors(errs))
					}
				})
			})
		}
	}
}

// BenchmarkDecodeEnv100k is issue 22's manifest: one container with
// 100,000 environment variables, about 3 MiB of YAML (just under
// MaxManifestBytes), decoded, defaulted and validated — and the same pod
// in JSON, as the CLI sends it to the agent:
//
//	go test -run '^$' -bench DecodeEnv100k -benchmem ./internal/model/
func BenchmarkDecodeEnv100k(b *testing.B) {
	y := modeltest.EnvEntries(100_000)
	js, err := yaml.YAMLToJSON(y)
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct {
		format string
		data   []byte
	}{{"yaml", y}, {"json", js}} {
		b.Run(in.format, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			modeltest.Loop(b, func() {
				pods, err := Decode(in.data)
				if err != nil {
					b.Fatal(err)
				}
				if errs := Validate(pods[0]); len(errs) > 0 {
					b.Fatal(FormatErrors(errs))
				}
			})
		})
	}
}

// BenchmarkCheckListItems is the cost of the list-item bound on issue 22's
// manifest in JSON, a part of BenchmarkDecodeEnv100k/json:
//
//	go test -run '^$' -bench CheckListItems -benchmem ./internal/model/
func BenchmarkCheckListItems(b *testing.B) {
	js, err := yaml.YAMLToJSON(modeltest.EnvEntries(100_000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(js)))
	modeltest.Loop(b, func() {
		if p := checkListItems(js); p != nil {
			b.Fatal(p)
		}
	})
}
