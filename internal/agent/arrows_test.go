package agent

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const agentPkg = "github.com/crib-dev/crib/internal/agent"

// TestArrows keeps the agent's packages layered as docs/architecture.md
// draws them: no package imports one of its ancestors, only the agent
// itself imports the status API (statusapi), and the status model
// (podstatus) stays pure: no API, HTTP or metrics code under it.
func TestArrows(t *testing.T) {
	imports := map[string][]string{} // agent package -> its non-test imports
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return err
		}
		imports[filepath.ToSlash(filepath.Join(agentPkg, path))] = p.Imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 10 {
		t.Fatalf("found %d agent packages, want the whole tree", len(imports))
	}
	for pkg, imps := range imports {
		for _, imp := range imps {
			if strings.HasPrefix(pkg, imp+"/") {
				t.Errorf("%s imports its ancestor %s", pkg, imp)
			}
			if imp == agentPkg+"/statusapi" && pkg != agentPkg {
				t.Errorf("%s imports statusapi: only the agent writes to the API", pkg)
			}
		}
	}
	model := agentPkg + "/podstatus"
	if _, ok := imports[model]; !ok {
		t.Fatalf("no package %s", model)
	}
	for _, imp := range imports[model] {
		switch {
		case imp == "net/http", strings.Contains(imp, "prometheus"), strings.HasPrefix(imp, agentPkg+"/statusapi"):
			t.Errorf("%s, the pure status model, imports %s", model, imp)
		}
	}
}

// TestOnlyTheTableWritesRecords: a podRecord field is written only in
// table.go, the pod table's own file, through its named transitions; and
// the agent only writes the status API's store, never reads it back. The
// check is by name: a field of another type in package agent that shares
// a record field's name would be flagged too, and wants another name.
func TestOnlyTheTableWritesRecords(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	fields := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "podRecord" {
				for _, fl := range ts.Type.(*ast.StructType).Fields.List {
					for _, name := range fl.Names {
						fields[name.Name] = true
					}
				}
			}
			return true
		})
	}
	if len(fields) < 10 {
		t.Fatalf("found %d podRecord fields", len(fields))
	}
	// recordField reports the record field that expression e, written to,
	// writes, or "".
	recordField := func(e ast.Expr) string {
		for {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				if fields[x.Sel.Name] {
					return x.Sel.Name
				}
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.StarExpr:
				e = x.X
			case *ast.ParenExpr:
				e = x.X
			default:
				return ""
			}
		}
	}
	for name, f := range files {
		table := filepath.Base(name) == "table.go"
		ast.Inspect(f, func(n ast.Node) bool {
			var written []ast.Expr
			switch x := n.(type) {
			case *ast.AssignStmt:
				written = x.Lhs
			case *ast.IncDecStmt:
				written = []ast.Expr{x.X}
			case *ast.UnaryExpr:
				if x.Op == token.AND {
					written = []ast.Expr{x.X}
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear") && len(x.Args) > 0 {
					written = x.Args[:1]
				}
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
					if st, ok := sel.X.(*ast.SelectorExpr); ok && st.Sel.Name == "store" && sel.Sel.Name != "Set" && sel.Sel.Name != "Delete" && sel.Sel.Name != "SetSourceErrors" {
						t.Errorf("%s: reads the status API's store (%s): the pod's record has what a sync needs", fset.Position(x.Pos()), sel.Sel.Name)
					}
				}
			case *ast.CompositeLit:
				if id, ok := x.Type.(*ast.Ident); ok && id.Name == "podRecord" && !table {
					t.Errorf("%s: makes a podRecord outside table.go", fset.Position(x.Pos()))
				}
			}
			if table {
				return true
			}
			for _, e := range written {
				if f := recordField(e); f != "" {
					t.Errorf("%s: writes podRecord.%s outside table.go: add a transition to the pod table", fset.Position(e.Pos()), f)
				}
			}
			return true
		})
	}
}
