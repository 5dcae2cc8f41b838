package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// yamlJSONCases are documents whose conversion has a rule of its own.
var yamlJSONCases = map[string]string{
	"pod":             podYAML,
	"empty":           "",
	"comment only":    "# nothing\n",
	"scalars":         "a: 1\nb: -2\nc: 1.5\nd: true\ne: yes\nf: ~\ng: 0x1f\nh: 0755\ni: 18446744073709551615\nj: 1e3\nk: .inf\n",
	"non-string keys": "1: a\n2.5: b\ntrue: c\n",
	"keys colliding":  "1: a\n\"1\": b\n",
	"escapes":         "s: \"quote \\\" backslash \\\\ tab \\t nl \\n bell \\a del \\x7f é 世 <&>\"\n",
	"nested":          "a:\n- [1, 2, {b: [c, d]}]\n- {}\n- []\n- null\n",
	"anchors":         "a: &x {b: 1}\nc: *x\nd:\n  <<: *x\n  e: 2\n",
	"timestamp":       "t: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\n",
	"binary":          "b: !!binary aGVsbG8=\n",
	"duplicate key":   "a: 1\na: 2\n",
	"bad indent":      "a:\n  b: 1\n c: 2\n",
	"list":            "- a\n- b\n",
	"string":          "hello\n",
}

// yamlToJSON gives the JSON sigs.k8s.io/yaml gives, or an error where it
// does: the same values once decoded; two keys that are one in JSON are
// an error.
func TestYAMLToJSONAgreesWithSigsYAML(t *testing.T) {
	for name, doc := range yamlJSONCases {
		t.Run(name, func(t *testing.T) { checkYAMLToJSON(t, []byte(doc)) })
	}
	if _, err := yamlToJSON([]byte(yamlJSONCases["keys colliding"])); !errors.Is(err, errKeyTwice) {
		t.Errorf("keys colliding: %v, want errKeyTwice", err)
	}
}

func FuzzYAMLToJSON(f *testing.F) {
	for _, doc := range yamlJSONCases {
		f.Add([]byte(doc))
	}
	for _, seed := range manifestSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc []byte) { checkYAMLToJSON(t, doc) })
}

func checkYAMLToJSON(t *testing.T, doc []byte) {
	t.Helper()
	want, wantErr := yaml.YAMLToJSONStrict(doc)
	got, gotErr := yamlToJSON(doc)
	if errors.Is(gotErr, errKeyTwice) {
		return // YAMLToJSONStrict keeps either key
	}
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("yamlToJSON(%q) = %s, %v; sigs.k8s.io/yaml gives %s, %v", doc, got, gotErr, want, wantErr)
	}
	if wantErr != nil {
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("yamlToJSON(%q) = %s: not JSON: %v", doc, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("yamlToJSON(%q) = %s; sigs.k8s.io/yaml gives %s", doc, got, want)
	}
}

// splitYAMLCases are inputs whose cutting has a rule of its own.
var splitYAMLCases = []string{
	"", "\n", "a: 1", "a: 1\n", "---\na: 1\n", "a: 1\n---\nb: 2\n", "a: 1\n---\n---\nb: 2",
	"a: 1\n--- # comment\nb: 2\n", "a: 1\n---   \nb: 2\n", "a: 1\n--- b\n", "a: 1\n----\n",
	"a: |\n  ---\n  x\n", "a: 1\r\n---\r\nb: 2\r\n", "  ---\na: 1\n", "---", "a: 1\n---",
}

// splitYAML gives the documents k8s.io/apimachinery's YAMLReader gives.
func TestSplitYAMLAgreesWithYAMLReader(t *testing.T) {
	for _, in := range splitYAMLCases {
		checkSplitYAML(t, []byte(in))
	}
}

func FuzzSplitYAML(f *testing.F) {
	for _, in := range splitYAMLCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkSplitYAML(t, in) })
}

func checkSplitYAML(t *testing.T, in []byte) {
	t.Helper()
	var want [][]byte
	var wantErr error
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(in)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			wantErr = err
			break
		}
		want = append(want, doc)
	}
	got, err := splitYAML(in)
	if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("splitYAML(%q): %v; YAMLReader: %v", in, err, wantErr)
	}
	if err != nil {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("splitYAML(%q) = %q; YAMLReader: %q", in, got, want)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("splitYAML(%q) = %q; YAMLReader: %q", in, got, want)
		}
	}
}
