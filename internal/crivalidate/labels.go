package crivalidate

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// MaxMapTotal bounds the keys and values of a request's labels, and of its
// annotations: the API server's 256 KiB for a pod's annotations, and room
// for the few the kubelet adds to them (config.seen, config.source, ...).
const MaxMapTotal = apivalidation.TotalAnnotationSizeLimitB + 16<<10

// Labels checks labels as the API server checks a pod's: each key a
// qualified name, the total of keys and values within MaxMapTotal. Values
// are only bounded in length (see MaxLabelValueLen).
func Labels(field string, m map[string]string) error {
	total := 0
	for k, v := range m {
		if errs := content.IsLabelKey(k); len(errs) > 0 {
			return Invalid(fmt.Sprintf("%s[%q]", field, k), "key %s", strings.Join(errs, "; "))
		}
		if len(v) > MaxLabelValueLen {
			return Invalid(fmt.Sprintf("%s[%q]", field, k), "value of %d bytes, more than %d", len(v), MaxLabelValueLen)
		}
		total += len(k) + len(v)
	}
	if total > MaxMapTotal {
		return Invalid(field, "%d bytes in all, more than %d", total, MaxMapTotal)
	}
	return nil
}

// Annotations checks annotations as the API server does: each key a
// qualified name (in any case), keys and values together within
// MaxMapTotal.
func Annotations(field string, m map[string]string) error {
	total := 0
	for k, v := range m {
		if errs := content.IsLabelKey(strings.ToLower(k)); len(errs) > 0 {
			return Invalid(fmt.Sprintf("%s[%q]", field, k), "key %s", strings.Join(errs, "; "))
		}
		total += len(k) + len(v)
	}
	if total > MaxMapTotal {
		return Invalid(field, "%d bytes in all, more than %d", total, MaxMapTotal)
	}
	return nil
}
