package prober

import internalapi "k8s.io/cri-api/pkg/apis"

// The CRI runtime service is an Exec.
var _ Exec = internalapi.RuntimeService(nil)
