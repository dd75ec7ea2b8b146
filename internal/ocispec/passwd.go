package ocispec

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// passwdEntry is one line of /etc/passwd, the fields crib needs.
type passwdEntry struct {
	name string
	uid  uint32
	gid  uint32
}

// groupEntry is one line of /etc/group.
type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// readRootfsFile reads name inside rootfs without following symlinks out of
// it. A missing file reads as empty.
func readRootfsFile(rootfs, name string) ([]string, error) {
	if rootfs == "" {
		return nil, nil
	}
	p, err := securejoin.SecureJoin(rootfs, name)
	if err != nil {
		return nil, fmt.Errorf("resolve %s in rootfs: %w", name, err)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s in rootfs: %w", name, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s in rootfs: %w", name, err)
	}
	return lines, nil
}

// parsePasswd parses passwd lines, skipping malformed ones as libc does.
func parsePasswd(lines []string) []passwdEntry {
	var out []passwdEntry
	for _, l := range lines {
		f := strings.Split(l, ":")
		if len(f) < 4 {
			continue
		}
		uid, err1 := parseID(f[2])
		gid, err2 := parseID(f[3])
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, passwdEntry{name: f[0], uid: uid, gid: gid})
	}
	return out
}

// parseGroup parses group lines, skipping malformed ones.
func parseGroup(lines []string) []groupEntry {
	var out []groupEntry
	for _, l := range lines {
		f := strings.Split(l, ":")
		if len(f) < 3 {
			continue
		}
		gid, err := parseID(f[2])
		if err != nil {
			continue
		}
		g := groupEntry{name: f[0], gid: gid}
		if len(f) > 3 && f[3] != "" {
			for _, m := range strings.Split(f[3], ",") {
				if m = strings.TrimSpace(m); m != "" {
					g.members = append(g.members, m)
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// parseID parses a uid or gid: a decimal number that fits in 32 bits.
func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, err
	}
	return uint32(n), nil
}
