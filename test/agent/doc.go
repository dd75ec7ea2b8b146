// Package agenttest is the node agent's scenario suite: it runs the real
// agent (internal/agent) in the test process over a real CRI runtime and
// checks the kubelet behaviours issue #5 asks for, from manifests written
// to a temporary directory: init containers in order, crash-loop backoff
// and restart policies, liveness and readiness probes, postStart and
// preStop hooks, manifest edits replacing a container or the sandbox, a
// deleted manifest tearing its pod down, an agent restart adopting running
// pods, invalid manifests, configMap and secret volumes, and image pull
// failures.
//
// The runtime is a crib daemon started by internal/testutil with the
// busybox test image, or, when CRIB_AGENT_TEST_ENDPOINT is set, the CRI
// endpoint it names (scripts/agent-containerd.sh runs the suite against
// containerd that way). Only the crib run checks for leaks.
//
// The tests need root and skip without it. They never assert durations:
// every wait polls the agent's status store or the runtime with a generous
// deadline.
package agenttest
