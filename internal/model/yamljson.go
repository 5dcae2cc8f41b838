package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// yamlToJSON converts one YAML document to JSON, as sigs.k8s.io/yaml's
// YAMLToJSONStrict does (the same parser, strict about a key given twice in
// one mapping, the same conversion of non-string keys, keys sorted), but
// writes the JSON straight from the parsed document. YAMLToJSONStrict
// copies the whole parsed tree into JSON-able maps and then marshals the
// copy through reflection: for a manifest of 100,000 env entries those two
// steps were a third of what decoding it allocated
// (BenchmarkDecodeEnv100k).
//
// The one difference: two keys of one mapping that convert to the same
// string (1 and "1") are an error (errKeyTwice), where YAMLToJSONStrict
// kept either, at random.
func yamlToJSON(doc []byte) ([]byte, error) {
	var obj any
	if err := yamlv2.UnmarshalStrict(doc, &obj); err != nil {
		return nil, err
	}
	w := jsonWriter{buf: make([]byte, 0, len(doc))}
	if err := w.value(obj); err != nil {
		return nil, err
	}
	return w.buf, nil
}

// errKeyTwice is yamlToJSON's error for two keys of one mapping that are
// one key in JSON.
var errKeyTwice = errors.New("mapping key given twice once converted to a string")

// jsonWriter appends JSON to buf.
type jsonWriter struct {
	buf []byte
	// entries is the stack of the mappings being written, each one's
	// entries sorted above its parent's.
	entries []mapEntry
}

// mapEntry is one key and value of a mapping being written.
type mapEntry struct {
	key   string
	value any
}

// value writes one parsed YAML value.
func (w *jsonWriter) value(v any) error {
	switch v := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case string:
		w.str(v)
	case bool:
		w.buf = strconv.AppendBool(w.buf, v)
	case int:
		w.buf = strconv.AppendInt(w.buf, int64(v), 10)
	case int64:
		w.buf = strconv.AppendInt(w.buf, v, 10)
	case uint64:
		w.buf = strconv.AppendUint(w.buf, v, 10)
	case []any:
		w.buf = append(w.buf, '[')
		for i, item := range v {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if err := w.value(item); err != nil {
				return err
			}
		}
		w.buf = append(w.buf, ']')
	case map[any]any:
		return w.mapping(v)
	default:
		// Floats and anything rarer: encoding/json's own rendering, as
		// YAMLToJSONStrict gives them (an infinity is an error there too).
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.buf = append(w.buf, b...)
	}
	return nil
}

// mapping writes a YAML mapping as a JSON object, its keys converted to
// strings and sorted, as encoding/json sorts a map's keys.
func (w *jsonWriter) mapping(m map[any]any) error {
	base := len(w.entries)
	defer func() { w.entries = w.entries[:base] }()
	for k, v := range m {
		key, err := jsonKey(k, v)
		if err != nil {
			return err
		}
		w.entries = append(w.entries, mapEntry{key, v})
	}
	sorted := w.entries[base:]
	slices.SortFunc(sorted, func(a, b mapEntry) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].key == sorted[i-1].key {
			return fmt.Errorf("%w: %q", errKeyTwice, sorted[i].key)
		}
	}
	w.buf = append(w.buf, '{')
	for i := range len(m) {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		// Indexed each time: the values below may grow the stack.
		e := w.entries[base+i]
		w.str(e.key)
		w.buf = append(w.buf, ':')
		if err := w.value(e.value); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

// jsonKey is a YAML key as a JSON object's key, converted as
// sigs.k8s.io/yaml converts it (a float as go-yaml writes one).
func jsonKey(k, v any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	case bool:
		return strconv.FormatBool(k), nil
	default:
		return "", fmt.Errorf("unsupported map key of type: %T, key: %+#v, value: %+#v", k, k, v)
	}
}

// str writes s as a JSON string; invalid UTF-8 becomes U+FFFD, as
// encoding/json writes it.
func (w *jsonWriter) str(s string) {
	const hex = "0123456789abcdef"
	w.buf = append(w.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			w.buf = append(w.buf, s[start:i]...)
			switch c {
			case '"', '\\':
				w.buf = append(w.buf, '\\', c)
			case '\n':
				w.buf = append(w.buf, '\\', 'n')
			case '\r':
				w.buf = append(w.buf, '\\', 'r')
			case '\t':
				w.buf = append(w.buf, '\\', 't')
			default:
				w.buf = append(w.buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			w.buf = append(w.buf, s[start:i]...)
			w.buf = append(w.buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	w.buf = append(w.buf, s[start:]...)
	w.buf = append(w.buf, '"')
}
