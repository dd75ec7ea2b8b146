// Package plan decides what a pod needs next. ComputeActions is a pure
// function from the desired pod (a core/v1 Pod) and what the runtime reports
// about it (Observed) to a list of actions (Actions): kill the pod, create a
// sandbox, kill these containers, start the next init container, start these
// app containers. It performs nothing; kuberuntime carries the actions out,
// and owns backoff, image pulls, hooks and garbage collection. ContainerHash
// is the spec hash the agent stores on each container and compares here.
//
// The rules are the kubelet's computePodActions:
//   - A new sandbox is needed when there is none, when more than one is
//     ready, when the newest is not ready, when its hash differs from
//     Input.SandboxHash, or when it has no IP and the pod is not on the host
//     network. Everything is killed first, then the first init container
//     starts (or every app container, minus those that succeeded under
//     OnFailure). A finished pod gets no new sandbox: restart policy Never
//     once the pod had a sandbox and any container, or every app container
//     succeeded under OnFailure with the init containers done.
//   - Init containers run one at a time, each to success. A failed one runs
//     again unless the policy is Never, which fails the pod (InitFailed,
//     KillPod). Init progress is read from the current sandbox only, which
//     stands in for the kubelet's purge of init containers on a new sandbox.
//   - Sidecars (init containers with restartPolicy Always, KEP-753) take
//     their turn in the init sequence like the others, but count as done
//     once they run and have started: no startup probe, or Input.Started
//     names them. A failed startup probe or a changed spec before that
//     replaces the sidecar as the next step. Once its turn has passed, a
//     sidecar is kept running whatever the pod's restart policy
//     (SidecarsToStart): an exited or missing one starts again, one whose
//     spec changed or whose liveness or startup probe failed is killed and
//     started again; its spec change never recreates the sandbox. A
//     failed sidecar is never an init failure. Sidecars do not keep a pod
//     alive: when no app container is kept and none starts, the pod is
//     killed with them, and a finished pod (any app container instance
//     shows the init containers were done once) stays finished.
//   - App containers start once the init containers are done. A running one
//     whose hash changed is killed and restarted whatever the policy; one
//     whose liveness or startup probe failed is killed and restarted unless
//     the policy is Never. An exited one restarts under Always, under
//     OnFailure when its exit code is not 0, never under Never. Created and
//     unknown instances are killed and replaced whatever the policy.
//   - When no app container is kept and none starts, the pod is killed.
//   - Resize (InPlacePodVerticalScaling): a running app container or
//     sidecar whose spec changed only in its resources (its stored
//     ResizeHash matches the spec's) is not restarted for the change. What
//     the runtime reports it runs with is compared with Input.Resources:
//     equal, it is kept; a CPU or memory difference whose resizePolicy is
//     NotRequired (the default) is a resize in place (ContainersToResize);
//     one whose policy is RestartContainer restarts it, whatever the
//     restart policy. A container made before the agent stored ResizeHash,
//     or one whose runtime reports no resources, is restarted. Likewise a
//     sandbox whose hash differs only in its resources is kept, and a
//     resize does not make an instance stale.
//
// Beyond the kubelet, which relies on the API server for these, the plan
// kills live containers whose name the spec no longer has, live instances
// older than the newest of their name, and live containers outside the
// current sandbox. Exited containers are never killed or removed here.
//
// Edits: crib's source keeps a pod's UID when its manifest is edited, where
// the kubelet would see a new static pod. So an instance made from another
// version of the pod (its container hash, or its sandbox's hash, differs
// from today's) is stale and does not count for the restart policy: a stale
// exited app container starts again whatever the policy, a finished pod
// with any stale newest instance gets a new sandbox, and a stale init
// container in the current sandbox recreates the sandbox so that the pod
// initialises again.
//
// Invariants (checked on every table case in the tests): a new instance of
// a name is planned only when every live instance of it is killed in the
// same plan; no app container starts before every init container has
// succeeded (sidecars: started), nor together with NextInit; only sidecars
// before NextInit are in SidecarsToStart; a plan that kills the pod
// for good does nothing else; restart counts only grow, so a new instance's
// CRI name never collides with one the runtime still holds.
package plan
