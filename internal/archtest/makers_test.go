package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// makerViolations parses one Go file, src, of package dir (relative to
// the module) and describes each place it makes a value that r keeps to
// its package: a composite literal of r.Type, or one of r.Values used other
// than in a comparison.
func makerViolations(fset *token.FileSet, name string, src any, dir, module string, r makerRule) ([]string, error) {
	if under(dir, r.Pkg) {
		return nil, nil
	}
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	local := ""
	for _, spec := range f.Imports {
		ip, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, err
		}
		if ip != module+"/"+r.Pkg {
			continue
		}
		local = filepath.Base(ip)
		if spec.Name != nil {
			local = spec.Name.Name
		}
	}
	if local == "" || local == "_" {
		return nil, nil
	}
	isType := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == local && sel.Sel.Name == r.Type
	}
	// ofType says whether the elements of a composite literal of type e
	// that leave their type out are values of r.Type.
	ofType := func(e ast.Expr) bool {
		switch t := e.(type) {
		case *ast.ArrayType:
			e = t.Elt
		case *ast.MapType:
			e = t.Value
		default:
			return false
		}
		if st, ok := e.(*ast.StarExpr); ok {
			e = st.X
		}
		return isType(e)
	}
	var out []string
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		parent := ast.Node(nil)
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.CompositeLit:
			made := n.Type != nil && isType(n.Type)
			if pl, ok := parent.(*ast.CompositeLit); ok && n.Type == nil && pl.Type != nil && ofType(pl.Type) {
				made = true // an element whose type is left out
			}
			if kv, ok := parent.(*ast.KeyValueExpr); ok && kv.Value == n && n.Type == nil && len(stack) > 2 {
				if pl, ok := stack[len(stack)-3].(*ast.CompositeLit); ok && pl.Type != nil && ofType(pl.Type) {
					made = true // a map's or an indexed array's element
				}
			}
			if made {
				out = append(out, fmt.Sprintf("%s: a %s.%s literal: %s", fset.Position(n.Pos()), r.Pkg, r.Type, r.Why))
			}
		case *ast.SelectorExpr:
			x, ok := n.X.(*ast.Ident)
			if !ok || x.Name != local || !slices.Contains(r.Values, n.Sel.Name) {
				return true
			}
			switch p := parent.(type) {
			case *ast.BinaryExpr:
				if p.Op == token.EQL || p.Op == token.NEQ {
					return true
				}
			case *ast.CaseClause:
				if slices.Contains(p.List, ast.Expr(n)) {
					return true
				}
			}
			out = append(out, fmt.Sprintf("%s: %s.%s used other than in a comparison: %s", fset.Position(n.Pos()), r.Pkg, n.Sel.Name, r.Why))
		}
		return true
	})
	return out, nil
}

// TestOnlyTheirPackageMakes checks makerRules against every Go file of the
// module, tests included.
func TestOnlyTheirPackageMakes(t *testing.T) {
	root, module := moduleRoot(t)
	fset := token.NewFileSet()
	files := 0
	walkGoFiles(t, root, []string{"internal", "cmd", "test"}, func(path, pkgDir string) error {
		files++
		for _, r := range makerRules {
			vs, err := makerViolations(fset, path, nil, pkgDir, module, r)
			if err != nil {
				return err
			}
			for _, v := range vs {
				t.Error(v)
			}
		}
		return nil
	})
	if files < 100 {
		t.Fatalf("read only %d files under %s: the walk is broken", files, root)
	}
}

// The checker itself catches each way of making an action outside the
// planner, and passes comparisons and the planner's own code.
func TestMakerViolationsCatchActionsMadeElsewhere(t *testing.T) {
	const src = `package podworker

import pl "example.com/m/internal/planner"

func f(a pl.Action) []pl.Action {
	if a.Kind == pl.Stop || a.Kind != pl.Kill {
	}
	switch a.Kind {
	case pl.Start, pl.Kill:
	}
	a.Kind = pl.Kill
	g(pl.Stop)
	_ = map[string]pl.Action{"m": {}}
	_ = []pl.Action{a}
	return []pl.Action{{Kind: pl.Start}, pl.Action{}}
}
`
	r := makerRule{Pkg: "internal/planner", Type: "Action", Values: []string{"Start", "Stop", "Kill"}, Why: "planner"}
	got, err := makerViolations(token.NewFileSet(), "x.go", src, "internal/podworker", "example.com/m", r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"x.go:11:11: internal/planner.Kill used other than in a comparison: planner",
		"x.go:12:4: internal/planner.Stop used other than in a comparison: planner",
		"x.go:13:32: a internal/planner.Action literal: planner",
		"x.go:15:21: a internal/planner.Action literal: planner",
		"x.go:15:28: internal/planner.Start used other than in a comparison: planner",
		"x.go:15:39: a internal/planner.Action literal: planner",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got, err = makerViolations(token.NewFileSet(), "x.go", src, "internal/planner/plannertest", "example.com/m", r)
	if err != nil || got != nil {
		t.Fatalf("in the planner's own tree: %v, %v", got, err)
	}
}
