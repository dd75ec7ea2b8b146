package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DropInDir is the directory of drop-ins for the configuration file at
// path: beside it, named after it without ".toml", plus ".d"
// (/etc/crib/crib.toml → /etc/crib/crib.d).
func DropInDir(path string) string {
	return strings.TrimSuffix(path, ".toml") + ".d"
}

// DropIns lists the drop-in files of the configuration at path in the
// order they apply: the *.toml files of DropInDir(path) sorted by name.
// Hidden files, other names and what is not a regular file (or a symbolic
// link to one) are left out. A missing directory has none.
func DropIns(path string) ([]string, error) {
	dir := DropInDir(path)
	entries, err := os.ReadDir(dir) // sorted by name
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config drop-ins: %w", err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || filepath.Ext(name) != ".toml" {
			continue
		}
		file := filepath.Join(dir, name)
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			fi, err := os.Stat(file)
			if err != nil {
				return nil, fmt.Errorf("config drop-in: %w", err)
			}
			mode = fi.Mode()
		}
		if mode.IsRegular() {
			files = append(files, file)
		}
	}
	return files, nil
}
