package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/podward/podward/internal/model/modeltest"
)

// checkListItems counts the items of every list of an object, each item of
// a List on its own, and names the list in which the count went past the
// limit; brackets and quotes inside strings are not lists.
func TestCheckListItems(t *testing.T) {
	for name, tc := range map[string]struct {
		js    string
		limit int
		want  string // the path named, "" for none
	}{
		"at the limit":           {`{"a":[1,2],"b":{"c":["x"]}}`, 3, ""},
		"past it, nested":        {`{"a":[1,2],"b":{"c":["x","y"]}}`, 3, "b.c"},
		"in a list of lists":     {`{"spec":{"containers":[{"env":[{},{}]},{"env":[{},{}]}]}}`, 5, "spec.containers[1].env"},
		"lists in lists":         {`{"a":[[1,2],[3]]}`, 4, "a[1]"},
		"empty lists":            {`{"a":[],"b":[[]],"c":[{}]}`, 2, ""},
		"strings are not lists":  {`{"a":"[1,2,3,[4]]","b":["\"],[","x"],"c\"[":1}`, 2, ""},
		"keys are named":         {`{"a":{"k\"ey":[1,2]}}`, 1, `a.k\"ey`},
		"a List's items apart":   {`{"kind":"List","items":[{"a":[1,2,3]},{"a":[1,2,3]}]}`, 3, ""},
		"in a List's item":       {`{"kind":"List","items":[{"a":[1,2]},{"a":[1,2,3,4]}]}`, 3, "items[1].a"},
		"a List's items counted": {`{"kind":"List","items":[{},{},{},{}]}`, 3, "items"},
		"malformed is left":      {`{"a":[1,2,`, 5, ""},
		"a document not object":  {`[1,2,3]`, 3, ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := checkListItemsUpTo([]byte(tc.js), tc.limit)
			switch {
			case tc.want == "" && p != nil:
				t.Fatalf("refused: %v", p)
			case tc.want != "" && p == nil:
				t.Fatalf("accepted, want %s refused", tc.want)
			case tc.want != "" && !strings.HasPrefix(p.msg, tc.want+": Too many: "):
				t.Fatalf("refused %q, want it to name %s", p.msg, tc.want)
			}
		})
	}
}

// A pod of more list items than any object etcd can store is refused by
// Decode, naming the list, before the items are decoded: here a million
// empty env entries, which fit 3 MiB of JSON.
func TestDecodeRefusesTooManyListItems(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big"},"spec":{"containers":[{"name":"app","image":"busybox","env":[{}`)
	for range MaxListItems {
		b.WriteString(",{}")
	}
	b.WriteString("]}]}}")
	if b.Len() > MaxManifestBytes {
		t.Fatalf("the manifest is %d bytes, more than MaxManifestBytes", b.Len())
	}
	_, err := Decode([]byte(b.String()))
	const want = "spec.containers[0].env: Too many: more than 786432 list items in one object: no object this large fits in etcd's 1.5 MiB limit on an object (an item takes at least 2 bytes stored)"
	if !errors.Is(err, ErrInvalidManifest) || err.Error() != want {
		t.Fatalf("Decode = %v, want %q", err, want)
	}
}

// Issue 22's manifest, one container of 100,000 env entries in about 3 MiB
// of YAML, is a pod Kubernetes stores (1.3 MB in protobuf): it is decoded
// whole and valid.
func TestDecodeEnv100k(t *testing.T) {
	pods, err := Decode(modeltest.EnvEntries(100_000))
	if err != nil {
		t.Fatal(err)
	}
	env := pods[0].Spec.Containers[0].Env
	if len(env) != 100_000 || env[99_999].Name != "V99999" || env[99_999].Value != "x" {
		t.Fatalf("decoded %d env entries, the last %+v", len(env), env[len(env)-1])
	}
	if errs := Validate(pods[0]); len(errs) > 0 {
		t.Fatal(FormatErrors(errs))
	}
}
