package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of internal/ may be, from its
// func line to its closing brace (issue 24: a longer one names its steps).
const maxFuncLines = 80

// goFiles parses every Go file under root's folders tops (walkGoFiles)
// and calls each with its path relative to root.
func goFiles(t *testing.T, root string, tops []string, each func(fset *token.FileSet, rel string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	walkGoFiles(t, root, tops, func(path, _ string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		each(fset, filepath.ToSlash(rel), f)
		return nil
	})
}

// No function of internal/'s code is longer than maxFuncLines. Test
// files are left out: a table of cases is long by nature.
func TestNoLongFunctions(t *testing.T) {
	root, _ := moduleRoot(t)
	n := 0
	goFiles(t, root, []string{"internal"}, func(fset *token.FileSet, rel string, f *ast.File) {
		if strings.HasSuffix(rel, "_test.go") {
			return
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n++
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, more than %d: name its steps", rel, fset.Position(fn.Pos()).Line, fn.Name.Name, lines, maxFuncLines)
			}
		}
	})
	if n < 1000 {
		t.Fatalf("only %d functions found under internal/: the walk missed the tree", n)
	}
}

// Nothing in the repository calls the time package's Sleep: code and
// tests wait on a condition or an event, with a deadline
// (docs/architecture.md).
func TestNoSleep(t *testing.T) {
	root, _ := moduleRoot(t)
	goFiles(t, root, []string{"internal", "cmd", "test"}, func(fset *token.FileSet, rel string, f *ast.File) {
		timeName := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		if timeName == "" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Sleep" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == timeName {
				t.Errorf("%s:%d: %s.Sleep: wait on a condition with a deadline instead", rel, fset.Position(sel.Pos()).Line, timeName)
			}
			return true
		})
	})
}
