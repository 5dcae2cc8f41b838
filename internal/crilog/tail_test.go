package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLog writes records (and then raw, unparsed bytes) to a log file.
func writeLog(t *testing.T, recs []Record, raw string) string {
	t.Helper()
	var b []byte
	for _, r := range recs {
		b = AppendRecord(b, r)
	}
	b = append(b, raw...)
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func full(stream, content string) Record {
	return Record{Time: t0, Stream: stream, Content: []byte(content)}
}

func part(stream, content string) Record {
	return Record{Time: t0, Stream: stream, Partial: true, Content: []byte(content)}
}

// tailByParsing is ReadTail's contract computed the simple way: parse the
// whole file, keep the last lines records, join, keep the last maxBytes.
func tailByParsing(t *testing.T, path string, lines, maxBytes int) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	recs := bytes.SplitAfter(data, []byte{'\n'})
	if len(recs) > 0 && len(recs[len(recs)-1]) == 0 {
		recs = recs[:len(recs)-1]
	}
	recs = recs[max(len(recs)-lines, 0):]
	var out []byte
	for _, line := range recs {
		r, err := Parse(line)
		if err != nil {
			continue
		}
		out = append(out, r.Content...)
		if !r.Partial {
			out = append(out, '\n')
		}
	}
	return out[max(len(out)-maxBytes, 0):]
}

func TestReadTail(t *testing.T) {
	long := strings.Repeat("0123456789", 2500) // more than a chunk and a record header
	tests := map[string]struct {
		recs     []Record
		raw      string
		lines    int
		maxBytes int
		want     string
	}{
		"the last lines, both streams": {
			recs:  []Record{full(Stdout, "one"), full(Stderr, "two"), full(Stdout, "three")},
			lines: 2, maxBytes: 100,
			want: "two\nthree\n",
		},
		"fewer records than asked": {
			recs:  []Record{full(Stdout, "only")},
			lines: 80, maxBytes: 100,
			want: "only\n",
		},
		"cut to the last bytes": {
			recs:  []Record{full(Stdout, "abcdef"), full(Stdout, "ghij")},
			lines: 80, maxBytes: 7,
			want: "f\nghij\n",
		},
		"the newline is the last byte": {
			recs:  []Record{full(Stdout, "abc")},
			lines: 1, maxBytes: 1,
			want: "\n",
		},
		"a partial record has no newline and counts as a line": {
			recs:  []Record{full(Stdout, "before"), part(Stdout, "long "), full(Stdout, "line")},
			lines: 2, maxBytes: 100,
			want: "long line\n",
		},
		"an unterminated last record is left out": {
			recs:  []Record{full(Stdout, "done")},
			raw:   t0.Format("2006-01-02T15:04:05.999999999Z07:00") + " stdout F half-writ",
			lines: 5, maxBytes: 100,
			want: "done\n",
		},
		"a malformed record is counted and skipped": {
			recs:  []Record{full(Stdout, "first"), full(Stdout, "second")},
			raw:   "not a record\n",
			lines: 2, maxBytes: 100,
			want: "second\n",
		},
		"an empty line": {
			recs:  []Record{full(Stdout, ""), full(Stdout, "x")},
			lines: 2, maxBytes: 100,
			want: "\nx\n",
		},
		"a record longer than a chunk": {
			recs:  []Record{full(Stdout, "head"), full(Stderr, long)},
			lines: 80, maxBytes: 2048,
			want: long[len(long)-2047:] + "\n",
		},
		"an empty file": {
			lines: 80, maxBytes: 2048,
			want: "",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeLog(t, tc.recs, tc.raw)
			got, err := ReadTail(path, tc.lines, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("ReadTail = %q, want %q", got, tc.want)
			}
			if ref := tailByParsing(t, path, tc.lines, tc.maxBytes); !bytes.Equal(got, ref) {
				t.Errorf("ReadTail = %q, but parsing the whole file gives %q", got, ref)
			}
		})
	}
}

// TestReadTailOfALongLog: the kubelet's limits (80 lines, 2048 bytes) on a
// log of many chunks, with lines of every length around the chunk size.
func TestReadTailOfALongLog(t *testing.T) {
	var recs []Record
	for i := range 3000 {
		stream := Stdout
		if i%3 == 0 {
			stream = Stderr
		}
		content := fmt.Sprintf("line %d %s", i, strings.Repeat("x", (i*37)%200))
		if i%50 == 0 {
			recs = append(recs, part(stream, strings.Repeat("p", 5000+i)))
		}
		recs = append(recs, full(stream, content))
	}
	path := writeLog(t, recs, "")
	for _, limits := range [][2]int{{80, 2048}, {3, 2048}, {80, 100000}, {5000, 1 << 20}} {
		got, err := ReadTail(path, limits[0], limits[1])
		if err != nil {
			t.Fatal(err)
		}
		if want := tailByParsing(t, path, limits[0], limits[1]); !bytes.Equal(got, want) {
			t.Errorf("ReadTail(%d lines, %d bytes): %d bytes that differ from the %d bytes of parsing the whole file", limits[0], limits[1], len(got), len(want))
		}
	}
}

func TestReadTailMissingFile(t *testing.T) {
	_, err := ReadTail(filepath.Join(t.TempDir(), "none.log"), 80, 2048)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadTail of a missing file: %v, want fs.ErrNotExist", err)
	}
}
