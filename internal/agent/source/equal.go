package source

import (
	"k8s.io/apimachinery/pkg/api/equality"
)

// Equal reports whether two snapshots have the same content: the same
// objects field by field (not the same pointers) and the same errors by
// message.
func (s Snapshot) Equal(o Snapshot) bool {
	if len(s.Pods) != len(o.Pods) || len(s.ConfigMaps) != len(o.ConfigMaps) ||
		len(s.Secrets) != len(o.Secrets) || len(s.Errors) != len(o.Errors) {
		return false
	}
	for i := range s.Pods {
		if !equality.Semantic.DeepEqual(s.Pods[i], o.Pods[i]) {
			return false
		}
	}
	for k, cm := range s.ConfigMaps {
		if !equality.Semantic.DeepEqual(cm, o.ConfigMaps[k]) {
			return false
		}
	}
	for k, sec := range s.Secrets {
		if !equality.Semantic.DeepEqual(sec, o.Secrets[k]) {
			return false
		}
	}
	for i := range s.Errors {
		if s.Errors[i].Error() != o.Errors[i].Error() {
			return false
		}
	}
	return true
}
