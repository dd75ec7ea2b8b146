package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Dump writes the effective configuration as TOML: a comment listing the
// files read, then every key, those a file set followed by
// "# from FILE:LINE". Keys without the comment have their default; a
// cgroup_parent at its default says which driver it follows.
func Dump(l Loaded) ([]byte, error) {
	data, err := annotate(l.Config, func(key string) string {
		if src, ok := l.Sources[key]; ok {
			return "from " + src.String()
		}
		if key == cgroupParentKey {
			return "the default for cgroup_driver " + strconv.Quote(l.Config.CgroupDriver)
		}
		return ""
	})
	if err != nil {
		return nil, fmt.Errorf("dump config: %w", err)
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
	b.Write(data)
	return []byte(b.String()), nil
}

// DefaultTOML is Default() as TOML, for `crib config default`; the one
// default that depends on another key says so.
func DefaultTOML() ([]byte, error) {
	return annotate(Default(), func(key string) string {
		if key != cgroupParentKey {
			return ""
		}
		return fmt.Sprintf("follows cgroup_driver: %q under cgroupfs, %q under systemd",
			DefaultCgroupParent("cgroupfs"), DefaultCgroupParent("systemd"))
	})
}

// annotate encodes cfg and ends the line of each key that note has
// something to say about with that as a comment.
func annotate(cfg Config, note func(key string) string) ([]byte, error) {
	data, err := Encode(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	stmts, err := scanKeys(string(data))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	for _, st := range stmts {
		if st.header {
			continue
		}
		if n := note(st.key.String()); n != "" {
			lines[st.end-1] += "  # " + n
		}
	}
	return []byte(strings.Join(lines, "\n")), nil
}
