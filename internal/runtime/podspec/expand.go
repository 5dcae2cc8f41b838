package podspec

import "strings"

// Vars are the variables a container's $(VAR) references may use: those its
// spec's env defines, by name, as in Kubernetes (not the defaults a runtime
// adds, such as the process runtime's PATH).
type Vars map[string]string

// Expand replaces the Kubernetes variable references $(NAME) in s with their
// value, the way Kubernetes expands command, args, env values and
// subPathExpr: "$$" is an escaped "$"; a reference to an unknown variable,
// an empty "$()" and an unterminated "$(" stay as written; a "$" before
// anything else is kept as it is.
func (v Vars) Expand(s string) string {
	return expand(s, func(name string) (string, bool) {
		val, ok := v[name]
		return val, ok && name != ""
	})
}

// expand replaces each reference $(NAME) in s with what lookup gives for
// NAME, or keeps it as written when lookup says no; "$$" and the other
// forms are read as Expand says.
func expand(s string, lookup func(name string) (string, bool)) string {
	i := strings.IndexByte(s, '$')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "$$"):
			b.WriteByte('$')
			s = rest[2:]
		case strings.HasPrefix(rest, "$("):
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				// Unterminated: "$(" is literal, the rest is read on.
				b.WriteString("$(")
				s = rest[2:]
				break
			}
			if val, ok := lookup(rest[2:end]); ok {
				b.WriteString(val)
			} else {
				b.WriteString(rest[:end+1])
			}
			s = rest[end+1:]
		default:
			b.WriteByte('$')
			s = rest[1:]
		}
		i = strings.IndexByte(s, '$')
	}
	b.WriteString(s)
	return b.String()
}

// ExpandAll is Expand of each of in, in a new slice; nil when in is empty.
func (v Vars) ExpandAll(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = v.Expand(s)
	}
	return out
}
