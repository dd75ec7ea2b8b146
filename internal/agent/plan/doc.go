// Package plan decides what a pod needs next. ComputeActions is a pure
// function from the desired pod (a core/v1 Pod) and what the runtime reports
// about it (Observed) to a list of actions (Actions): kill the pod, create a
// sandbox, kill these containers, start the next init container, start these
// app containers. It performs nothing; kuberuntime carries the actions out.
//
// Invariants: ComputeActions never asks to start a container that is
// running or created, never starts an app container before every init
// container has succeeded, and never asks for two live instances of one
// container name.
package plan
