package timeline

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestSVGGolden draws the known run and compares it with
// testdata/demo.svg (go test ./internal/timeline -update rewrites it:
// look at the picture before committing it).
func TestSVGGolden(t *testing.T) {
	p := demoPod()
	var b bytes.Buffer
	if err := SVG(&b, p, p.DefaultWindow(), 0); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "demo.svg")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the SVG differs from %s (run with -update to rewrite it, then look at it):\n%s", golden, b.String())
	}
	// Self-contained and well-formed: it parses as XML.
	d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
}

// TestSVGEscapes names with markup characters as text.
func TestSVGEscapes(t *testing.T) {
	h := NewHistory(Limits{})
	ref := PodRef{Namespace: "default", Name: "a<b>&c", UID: "u1", CreatedAt: t0}
	h.Note(ref, Note{Kind: NoteStarted, At: at(0), Container: "x&y", Role: RoleMain})
	p, _ := h.Get("u1")
	p.Now = at(1)
	var b bytes.Buffer
	if err := SVG(&b, p, p.DefaultWindow(), 400); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte("a<b>")) || !bytes.Contains(b.Bytes(), []byte("a&lt;b&gt;&amp;c")) {
		t.Errorf("names not escaped:\n%s", b.String())
	}
}
