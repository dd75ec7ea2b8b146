package crivalidate

import (
	"path/filepath"
	"strings"
)

// AbsPath checks an absolute path: absolute, at most PATH_MAX, no NUL.
// With clean, it must also be as filepath.Clean writes it.
func AbsPath(field, p string, clean bool) error {
	if err := String(field, p, MaxPathLen); err != nil {
		return err
	}
	if !filepath.IsAbs(p) {
		return Invalid(field, "%q is not absolute", p)
	}
	if clean && filepath.Clean(p) != p {
		return Invalid(field, "%q is not clean (%q)", p, filepath.Clean(p))
	}
	return nil
}

// RelPath checks a relative path that must stay below the directory it is
// joined to: relative, clean, not "." and not leaving by "..".
func RelPath(field, p string) error {
	if err := String(field, p, MaxPathLen); err != nil {
		return err
	}
	switch c := filepath.Clean(p); {
	case filepath.IsAbs(p):
		return Invalid(field, "%q is not relative", p)
	case c != p:
		return Invalid(field, "%q is not clean (%q)", p, c)
	case c == "." || c == ".." || strings.HasPrefix(c, "../"):
		return Invalid(field, "%q is not below its directory", p)
	}
	return nil
}
