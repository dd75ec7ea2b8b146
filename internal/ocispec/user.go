package ocispec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// user resolves the process user: CRI run_as_username or run_as_user, else
// the image's User; CRI run_as_group (only with a CRI user) overrides any group. Names are looked up
// in the rootfs's /etc/passwd and /etc/group.
func (b *builder) user() error {
	u, err := ResolveUser(b.in.RootfsPath, b.sc, b.in.Image.User)
	if err != nil {
		return err
	}
	b.spec.Process.User = u
	return nil
}

// ResolveUser computes the OCI user for a container whose rootfs is at
// rootfs, from the CRI security context sc (may be nil) and the image's User
// string ("", "name", "uid", "name:group", "uid:gid", mixed forms too).
func ResolveUser(rootfs string, sc *runtimeapi.LinuxContainerSecurityContext, imageUser string) (specs.User, error) {
	userPart, groupPart, err := userStrings(sc, imageUser)
	if err != nil {
		return specs.User{}, err
	}
	db, err := loadUserDB(rootfs)
	if err != nil {
		return specs.User{}, err
	}
	pw, err := db.lookupUser(userPart)
	if err != nil {
		return specs.User{}, err
	}
	gid := pw.gid
	if groupPart != "" {
		if gid, err = db.lookupGroup(groupPart); err != nil {
			return specs.User{}, err
		}
	}
	var extra []uint32
	if sc.GetSupplementalGroupsPolicy() != runtimeapi.SupplementalGroupsPolicy_Strict {
		extra = db.memberships(pw.name)
	}
	for _, g := range sc.GetSupplementalGroups() {
		if g < 0 || g > int64(^uint32(0)) {
			return specs.User{}, fmt.Errorf("supplemental group %d out of range: %w", g, errdefs.ErrInvalidArgument)
		}
		extra = append(extra, uint32(g))
	}
	return specs.User{
		UID:            pw.uid,
		GID:            gid,
		AdditionalGids: uniqueGIDs(gid, extra),
	}, nil
}

// userStrings picks the user and group strings to resolve.
func userStrings(sc *runtimeapi.LinuxContainerSecurityContext, imageUser string) (string, string, error) {
	var userPart, groupPart string
	switch {
	case sc.GetRunAsGroup() != nil && sc.GetRunAsUser() == nil && sc.GetRunAsUsername() == "":
		// As the kubelet and containerd rule: a group alone would pair
		// with whatever user the image names, which nobody asked for.
		return "", "", fmt.Errorf("linux.security_context.run_as_group is set without run_as_user or run_as_username: %w", errdefs.ErrInvalidArgument)
	case sc.GetRunAsUsername() != "" && sc.GetRunAsUser() != nil:
		return "", "", fmt.Errorf("run_as_user and run_as_username are both set: %w", errdefs.ErrInvalidArgument)
	case sc.GetRunAsUsername() != "":
		userPart = sc.GetRunAsUsername()
	case sc.GetRunAsUser() != nil:
		uid := sc.GetRunAsUser().GetValue()
		if uid < 0 || uid > int64(^uint32(0)) {
			return "", "", fmt.Errorf("run_as_user %d out of range: %w", uid, errdefs.ErrInvalidArgument)
		}
		userPart = strconv.FormatInt(uid, 10)
	default:
		var ok bool
		userPart, groupPart, ok = strings.Cut(imageUser, ":")
		if ok && (userPart == "" || groupPart == "") {
			return "", "", fmt.Errorf("image user %q is malformed: %w", imageUser, errdefs.ErrInvalidArgument)
		}
	}
	if g := sc.GetRunAsGroup(); g != nil {
		if g.GetValue() < 0 || g.GetValue() > int64(^uint32(0)) {
			return "", "", fmt.Errorf("run_as_group %d out of range: %w", g.GetValue(), errdefs.ErrInvalidArgument)
		}
		groupPart = strconv.FormatInt(g.GetValue(), 10)
	}
	return userPart, groupPart, nil
}

// userDB is the parsed /etc/passwd and /etc/group of one rootfs.
type userDB struct {
	users  []passwdEntry
	groups []groupEntry
}

func loadUserDB(rootfs string) (*userDB, error) {
	pw, err := readRootfsFile(rootfs, "/etc/passwd")
	if err != nil {
		return nil, err
	}
	gr, err := readRootfsFile(rootfs, "/etc/group")
	if err != nil {
		return nil, err
	}
	return &userDB{users: parsePasswd(pw), groups: parseGroup(gr)}, nil
}

// lookupUser resolves a user name or uid. An empty string is root. A uid
// missing from /etc/passwd is fine (primary gid 0, no name); a name missing
// from it is an invalid argument.
func (db *userDB) lookupUser(s string) (passwdEntry, error) {
	if s == "" {
		s = "0"
	}
	if uid, err := parseID(s); err == nil {
		for _, u := range db.users {
			if u.uid == uid {
				return u, nil
			}
		}
		return passwdEntry{uid: uid}, nil
	}
	for _, u := range db.users {
		if u.name == s {
			return u, nil
		}
	}
	return passwdEntry{}, fmt.Errorf("user %q not found in /etc/passwd of the container image: %w", s, errdefs.ErrInvalidArgument)
}

// lookupGroup resolves a group name or gid.
func (db *userDB) lookupGroup(s string) (uint32, error) {
	if gid, err := parseID(s); err == nil {
		return gid, nil
	}
	for _, g := range db.groups {
		if g.name == s {
			return g.gid, nil
		}
	}
	return 0, fmt.Errorf("group %q not found in /etc/group of the container image: %w", s, errdefs.ErrInvalidArgument)
}

// memberships lists, in file order, the gids of groups naming user as a
// member.
func (db *userDB) memberships(user string) []uint32 {
	if user == "" {
		return nil
	}
	var out []uint32
	for _, g := range db.groups {
		for _, m := range g.members {
			if m == user {
				out = append(out, g.gid)
				break
			}
		}
	}
	return out
}

// uniqueGIDs returns primary followed by extra, without duplicates, order
// kept.
func uniqueGIDs(primary uint32, extra []uint32) []uint32 {
	out := []uint32{primary}
	seen := map[uint32]bool{primary: true}
	for _, g := range extra {
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}
