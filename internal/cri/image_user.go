package cri

import (
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageUser splits an image's USER into the uid or the user name the
// kubelet checks runAsNonRoot against; the group part is dropped.
func imageUser(user string) (*runtimeapi.Int64Value, string) {
	if user == "" {
		return nil, ""
	}
	name, _, _ := strings.Cut(user, ":")
	if uid, err := strconv.ParseInt(name, 10, 64); err == nil {
		return &runtimeapi.Int64Value{Value: uid}, ""
	}
	return nil, name
}
