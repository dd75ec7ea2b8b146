package agent

import (
	"go/build"
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
