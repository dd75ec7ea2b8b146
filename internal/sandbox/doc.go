// Package sandbox owns pod sandboxes: their records, their pinned
// namespaces, the pod's /dev/shm, hostname, resolv.conf and hosts files, the
// pause process of pods that share a PID namespace, and the pod cgroup.
//
// It does not own containers: the CRI layer stops and removes a pod's
// containers before it asks this package to stop or remove the pod.
//
// When Config.Events is set, every transition is published as a neutral
// lifecycle.Event, with the sandbox id as both subject and pod: created and
// started when Run makes it ready, stopped when Stop (or a Remove without
// a Stop) ends it, deleted when Remove has removed it. Events are
// published while the index lock is held, so they leave in order.
//
// Invariants: a sandbox is in the in-memory index only once its record is on
// disk; a record in state Creating found on restore is a creation the daemon
// died in, and is rolled back. Stop and Remove are idempotent and undo only
// what is there.
package sandbox
