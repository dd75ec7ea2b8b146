package config

import (
	"fmt"
	"strings"
)

// Dump writes the effective configuration as TOML: a comment listing the
// files read, then every key, those a file set followed by
// "# from FILE:LINE". Keys without the comment have their default.
func Dump(l Loaded) ([]byte, error) {
	data, err := Encode(l.Config)
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	stmts, err := scanKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("dump config: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	for _, st := range stmts {
		if st.header {
			continue
		}
		if src, ok := l.Sources[st.key.String()]; ok {
			lines[st.end-1] += "  # from " + src.String()
		}
	}

	var b strings.Builder
	b.WriteString("# The effective crib configuration: the defaults, then these files in order.\n")
	if len(l.Files) == 0 {
		b.WriteString("#   (none)\n")
	}
	for _, f := range l.Files {
		fmt.Fprintf(&b, "#   %s\n", f)
	}
	b.WriteString("# A key a file set ends with \"# from FILE:LINE\"; the others have their default.\n\n")
	b.WriteString(strings.Join(lines, "\n"))
	return []byte(b.String()), nil
}
