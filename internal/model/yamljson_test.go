package model

import (
	"encoding/json"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// yamlJSONCases are documents whose conversion has a rule of its own.
var yamlJSONCases = map[string]string{
	"pod":             podYAML,
	"empty":           "",
	"comment only":    "# nothing\n",
	"scalars":         "a: 1\nb: -2\nc: 1.5\nd: true\ne: yes\nf: ~\ng: 0x1f\nh: 0755\ni: 18446744073709551615\nj: 1e3\nk: .inf\n",
	"non-string keys": "1: a\n2.5: b\ntrue: c\n",
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
// does: the same values once decoded.
func TestYAMLToJSONAgreesWithSigsYAML(t *testing.T) {
	for name, doc := range yamlJSONCases {
		t.Run(name, func(t *testing.T) { checkYAMLToJSON(t, []byte(doc)) })
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
