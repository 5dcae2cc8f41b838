package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pkgImports is what one package directory imports from the module, split
// by whether a _test.go file or a non-test file does.
type pkgImports struct {
	code, tests map[string]bool
}

// moduleRoot finds go.mod above the test's directory and reads the module
// path from it.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// readImports parses the import clauses of every Go file under root's
// internal/, cmd/ and test/ folders.
func readImports(t *testing.T, root, module string) map[string]*pkgImports {
	t.Helper()
	pkgs := map[string]*pkgImports{}
	fset := token.NewFileSet()
	walkGoFiles(t, root, []string{"internal", "cmd", "test"}, func(path, pkgDir string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		p := pkgs[pkgDir]
		if p == nil {
			p = &pkgImports{code: map[string]bool{}, tests: map[string]bool{}}
			pkgs[pkgDir] = p
		}
		into := p.code
		if strings.HasSuffix(path, "_test.go") {
			into = p.tests
		}
		for _, spec := range f.Imports {
			ip, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if local, ok := strings.CutPrefix(ip, module+"/"); ok {
				into[local] = true
			}
		}
		return nil
	})
	return pkgs
}

// under says whether pkg is path or below it.
func under(pkg, path string) bool {
	return pkg == path || strings.HasPrefix(pkg, path+"/")
}

// violations checks every rule against pkgs and describes each broken one.
func violations(pkgs map[string]*pkgImports, rules []rule) []string {
	var out []string
	for _, r := range rules {
		for pkg, imps := range pkgs {
			if !under(pkg, r.From) {
				continue
			}
			check := func(set map[string]bool, where string) {
				for imp := range set {
					if under(imp, pkg) {
						continue // itself, or a package of its own below it
					}
					bad := slices.ContainsFunc(r.Not, func(n string) bool { return under(imp, n) })
					if r.Only != nil && !slices.ContainsFunc(r.Only, func(n string) bool { return under(imp, n) }) && !under(imp, r.From) {
						bad = true
					}
					if bad {
						out = append(out, pkg+where+" imports "+imp+": "+r.Why)
					}
				}
			}
			check(imps.code, "")
			if r.Tests {
				check(imps.tests, " (tests)")
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestImportDirections(t *testing.T) {
	root, module := moduleRoot(t)
	pkgs := readImports(t, root, module)
	if len(pkgs) < 10 {
		t.Fatalf("read only %d packages under %s: the walk is broken", len(pkgs), root)
	}
	for _, r := range rules {
		found := false
		for pkg := range pkgs {
			found = found || under(pkg, r.From)
		}
		if !found {
			t.Errorf("rule for %s: no such package (rules.go is out of date)", r.From)
		}
	}
	for _, v := range violations(pkgs, rules) {
		t.Error(v)
	}
}

// The checker itself catches each kind of rule broken, and passes what is
// allowed.
func TestViolationsCatchForbiddenImports(t *testing.T) {
	set := func(s ...string) map[string]bool {
		m := map[string]bool{}
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	pkgs := map[string]*pkgImports{
		"internal/planner":         {code: set("internal/model", "internal/runtime"), tests: set()},
		"internal/runtime/process": {code: set("internal/runtime", "internal/runtime/process/shim"), tests: set("internal/podworker")},
		"internal/cli":             {code: set("internal/daemon", "internal/agent"), tests: set("internal/agent")},
		"internal/model":           {code: set(), tests: set()},
	}
	rs := []rule{
		{From: "internal/planner", Only: []string{"internal/model"}, Why: "pure"},
		{From: "internal/runtime", Not: []string{"internal/podworker"}, Tests: true, Why: "contract"},
		{From: "internal/cli", Not: []string{"internal/agent"}, Why: "through node"},
		{From: "internal/model", Only: []string{}, Tests: true, Why: "bottom"},
	}
	got := violations(pkgs, rs)
	want := []string{
		"internal/cli imports internal/agent: through node",
		"internal/planner imports internal/runtime: pure",
		"internal/runtime/process (tests) imports internal/podworker: contract",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// linkViolations checks the dependencies deps (import paths, the standard
// library left out) of r.Main in module against r.
func linkViolations(deps []string, module string, r linkRule) []string {
	allowed := func(dep string) bool {
		local, inModule := strings.CutPrefix(dep, module+"/")
		if inModule {
			return under(local, r.Main) || slices.ContainsFunc(r.Module, func(m string) bool { return under(local, m) })
		}
		return slices.ContainsFunc(r.External, func(e string) bool { return under(dep, e) })
	}
	var out []string
	for _, dep := range deps {
		if !allowed(dep) {
			out = append(out, r.Main+" links "+dep+": "+r.Why)
		}
	}
	return out
}

// The programs of linkRules link only what their rule allows, transitively:
// `go list -deps` of each, without the standard library.
func TestLinkedPackages(t *testing.T) {
	root, module := moduleRoot(t)
	for _, r := range linkRules {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./"+r.Main)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go list -deps ./%s: %v\n%s", r.Main, err, stderr)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, module+"/"+r.Main) {
			t.Fatalf("go list -deps ./%s does not list the program itself: %q", r.Main, deps)
		}
		for _, v := range linkViolations(deps, module, r) {
			t.Error(v)
		}
	}
}

// The link check catches a dependency outside the rule, however deep, and
// passes what is allowed.
func TestLinkViolationsCatchForbiddenDependencies(t *testing.T) {
	r := linkRule{Main: "cmd/small", Module: []string{"internal/leaf"}, External: []string{"golang.org/x/sys"}, Why: "small"}
	deps := []string{
		"golang.org/x/sys/unix", "m/internal/leaf", "m/internal/leaf/below", "m/cmd/small",
		"k8s.io/api/core/v1", "m/internal/model", "golang.org/x/net/http2",
	}
	got := linkViolations(deps, "m", r)
	want := []string{
		"cmd/small links k8s.io/api/core/v1: small",
		"cmd/small links m/internal/model: small",
		"cmd/small links golang.org/x/net/http2: small",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("linkViolations =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
