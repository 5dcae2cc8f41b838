package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonPath is the part of kubectl's JSONPath that `wait --for=jsonpath`
// needs: a template "{.a.b[0].c}" of field names, array indexes, [*], and
// filters [?(@.key=="value")] (or !=), evaluated on an object's JSON.
type jsonPath struct {
	steps []pathStep
}

type pathStep struct {
	field  string // a field name, or
	index  *int   // an array index (negative counts from the end), or
	all    bool   // [*], or
	filter *pathFilter
}

type pathFilter struct {
	key    []string // the dotted path after "@."
	value  string
	negate bool
}

// parseJSONPath parses a template such as "{.status.phase}" (the braces
// may be left out).
func parseJSONPath(tmpl string) (*jsonPath, error) {
	expr := strings.TrimSpace(tmpl)
	if strings.HasPrefix(expr, "{") {
		if !strings.HasSuffix(expr, "}") {
			return nil, fmt.Errorf("unclosed action in JSONPath %q", tmpl)
		}
		expr = expr[1 : len(expr)-1]
	}
	expr = strings.TrimPrefix(expr, "$")
	if expr == "" || (expr[0] != '.' && expr[0] != '[') {
		return nil, fmt.Errorf("JSONPath %q: want a path such as {.status.phase}", tmpl)
	}
	var p jsonPath
	for expr != "" {
		switch expr[0] {
		case '.':
			expr = expr[1:]
			end := strings.IndexAny(expr, ".[")
			if end < 0 {
				end = len(expr)
			}
			if end == 0 {
				return nil, fmt.Errorf("JSONPath %q: empty field name", tmpl)
			}
			p.steps = append(p.steps, pathStep{field: expr[:end]})
			expr = expr[end:]
		case '[':
			end := strings.Index(expr, "]")
			if end < 0 {
				return nil, fmt.Errorf("JSONPath %q: unclosed [", tmpl)
			}
			inner := expr[1:end]
			// A filter may hold a "]" inside its quoted value.
			if strings.HasPrefix(inner, "?(") {
				closing := strings.Index(expr, ")]")
				if closing < 0 {
					return nil, fmt.Errorf("JSONPath %q: unclosed filter", tmpl)
				}
				inner, end = expr[1:closing+1], closing+1
			}
			step, err := parseBracket(inner)
			if err != nil {
				return nil, fmt.Errorf("JSONPath %q: %w", tmpl, err)
			}
			p.steps = append(p.steps, step)
			expr = expr[end+1:]
		default:
			return nil, fmt.Errorf("JSONPath %q: unexpected %q", tmpl, expr)
		}
	}
	return &p, nil
}

func parseBracket(inner string) (pathStep, error) {
	switch {
	case inner == "*":
		return pathStep{all: true}, nil
	case strings.HasPrefix(inner, "'") || strings.HasPrefix(inner, `"`):
		name, err := unquote(inner)
		return pathStep{field: name}, err
	case strings.HasPrefix(inner, "?(") && strings.HasSuffix(inner, ")"):
		cond := strings.TrimSpace(inner[2 : len(inner)-1])
		op, negate := "==", false
		if strings.Contains(cond, "!=") {
			op, negate = "!=", true
		}
		left, right, ok := strings.Cut(cond, op)
		left, right = strings.TrimSpace(left), strings.TrimSpace(right)
		if !ok || !strings.HasPrefix(left, "@.") {
			return pathStep{}, fmt.Errorf("unsupported filter %q: want [?(@.key==\"value\")]", inner)
		}
		value, err := unquote(right)
		if err != nil {
			value = right // a number or a bare word
		}
		return pathStep{filter: &pathFilter{key: strings.Split(left[2:], "."), value: value, negate: negate}}, nil
	default:
		n, err := strconv.Atoi(inner)
		if err != nil {
			return pathStep{}, fmt.Errorf("unsupported [%s]: want an index, *, a quoted name or a filter", inner)
		}
		return pathStep{index: &n}, nil
	}
}

func unquote(s string) (string, error) {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1], nil
	}
	return "", fmt.Errorf("not a quoted string: %s", s)
}

// eval returns the values the path selects in obj (its JSON).
func (p *jsonPath) eval(obj any) ([]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var root any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	cur := []any{root}
	for _, st := range p.steps {
		var next []any
		for _, v := range cur {
			next = append(next, st.apply(v)...)
		}
		cur = next
	}
	return cur, nil
}

func (st pathStep) apply(v any) []any {
	switch {
	case st.field != "":
		if m, ok := v.(map[string]any); ok {
			if x, ok := m[st.field]; ok {
				return []any{x}
			}
		}
	case st.index != nil:
		if a, ok := v.([]any); ok {
			i := *st.index
			if i < 0 {
				i += len(a)
			}
			if i >= 0 && i < len(a) {
				return []any{a[i]}
			}
		}
	case st.all:
		switch x := v.(type) {
		case []any:
			return x
		case map[string]any:
			out := make([]any, 0, len(x))
			for _, e := range x {
				out = append(out, e)
			}
			return out
		}
	case st.filter != nil:
		a, ok := v.([]any)
		if !ok {
			return nil
		}
		var out []any
		for _, e := range a {
			got := []any{e}
			for _, k := range st.filter.key {
				got = pathStep{field: k}.apply(got[0])
				if len(got) == 0 {
					break
				}
			}
			match := len(got) == 1 && valueText(got[0]) == st.filter.value
			if match != st.filter.negate {
				out = append(out, e)
			}
		}
		return out
	}
	return nil
}

// valueText prints a JSON value as kubectl's JSONPath does: strings bare,
// numbers and booleans as written, objects and arrays as JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
