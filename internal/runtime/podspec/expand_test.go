package podspec

import (
	"slices"
	"testing"
)

// The cases of both runtimes' expansion tests, which now share Expand.
func TestExpand(t *testing.T) {
	vars := Vars{"A": "x", "B": "$(A)", "EMPTY": "", "": "empty"}
	tests := map[string]struct{ in, want string }{
		"empty string":                  {"", ""},
		"no reference":                  {"plain", "plain"},
		"a reference":                   {"$(A)", "x"},
		"references among text":         {"a$(A)b$(A)", "axbx"},
		"references in the middle":      {"x$(A)y$(A)z", "xxyxz"},
		"an empty value":                {"$(EMPTY)", ""},
		"a value is not expanded again": {"$(B)", "$(A)"},
		"unknown variable kept":         {"$(MISSING)", "$(MISSING)"},
		"escaped reference":             {"$$(A)", "$(A)"},
		"escape then reference":         {"$$$(A)", "$x"},
		"escaped dollar":                {"$$", "$"},
		"two escapes":                   {"$(A) and $$$$", "x and $$"},
		"lone dollar":                   {"$", "$"},
		"trailing dollar":               {"end$", "end$"},
		"dollar before a letter":        {"a$b", "a$b"},
		"dollar before a name":          {"$A", "$A"},
		"braces are not references":     {"${A}", "${A}"},
		"unterminated":                  {"$(A", "$(A"},
		"unterminated, then escape":     {"$(A $$", "$(A $"},
		"reference then unterminated":   {"$(A)$(unterm", "x$(unterm"},
		"empty name kept, though set":   {"$()", "$()"},
		"all kinds":                     {"$(A)$(MISSING)$$(A)$(", "x$(MISSING)$(A)$("},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := vars.Expand(tc.in); got != tc.want {
				t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestExpandAll(t *testing.T) {
	vars := Vars{"A": "x"}
	tests := map[string]struct{ in, want []string }{
		"nil":   {nil, nil},
		"empty": {[]string{}, nil},
		"each":  {[]string{"$(A)", "b", "$$(A)"}, []string{"x", "b", "$(A)"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := vars.ExpandAll(tc.in)
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("ExpandAll(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
	// A new slice: the spec is not written to.
	in := []string{"$(A)"}
	vars.ExpandAll(in)
	if in[0] != "$(A)" {
		t.Errorf("ExpandAll changed its input: %q", in)
	}
}
