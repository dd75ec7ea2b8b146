// Package source turns a directory of Kubernetes manifests into snapshots
// of defaulted, validated Pods, ConfigMaps and Secrets, and watches the
// directory for changes. It owns reading, strict decoding, the defaults the
// API server would have applied, validation and the identity of static
// pods; it does not run anything, diff snapshots into ADD/UPDATE/REMOVE
// updates (the sync loop does), or report errors anywhere but in the
// snapshot.
//
// Files: *.yaml, *.yml and *.json directly in the directory, except hidden
// files and backups ending in "~", read in file name order. A file holds
// one or more YAML documents separated by "---" (or a stream of JSON
// values); each is a v1 Pod, ConfigMap or Secret, or a List, PodList,
// ConfigMapList or SecretList of them. Decoding is strict and
// case-sensitive: an unknown or duplicated field is an error naming its
// path ("unknown field \"spec.containers[0].imagee\""), and so is a wrong
// apiVersion or kind.
//
// A file is the unit of acceptance: one bad document or invalid object
// rejects the whole file, which then contributes nothing and appears once
// in Snapshot.Errors with every problem found. The same goes for a file
// that defines an object (kind and namespace/name) that a file earlier in
// name order already defined: the later file is rejected, naming the
// earlier one. Other files are never affected.
//
// Identity: a pod keeps the name it was written with (standalone there are
// no mirror pods, so the kubelet's "-<node>" suffix would only get in the
// way). Its UID is a hash of the file's absolute path, the namespace, the
// name and the node name, and a uid in the manifest is ignored. Unlike the
// kubelet, which hashes the pod's content too and so sees every edit as a
// new pod, the UID here survives edits of the pod in the same file; the
// agent restarts what changed by comparing container and sandbox spec
// hashes instead. Moving a pod to another file gives it a new UID. Pods
// carry the annotations kubernetes.io/config.source=file,
// kubernetes.io/config.hash=<uid> and crib.dev/config.file=<path>.
//
// Defaults: what the API server would have filled before a kubelet saw
// the pod (see defaults.go): namespace "default", spec.nodeName, restart
// and DNS policy, a 30 s grace period, pull policy by tag, termination
// message path and policy, port protocol, probe timings, HTTP scheme and
// path, volume modes, requests from limits; a Secret's stringData is merged
// into data. The manifest's status is replaced by phase Pending.
//
// Watching: a Watcher sends the first snapshot at once; at the first event
// of a burst it sends what is new (pods, ConfigMaps, Secrets that were not
// there), so a new pod starts without waiting; then, once the burst has
// been quiet for 10 ms, the whole snapshot with edits and removals. It rescans
// every 20 s (Options.RescanInterval) for what events cannot show, such as
// an edited symlink target. The watcher is careful with removals: a file it
// rejects keeps the pods it last defined (as an API server keeps an object
// whose update failed validation), so a file read half-written or saved
// with a typo never tears its pods down; and a pod missing from the
// directory is only dropped once it has stayed missing for 500 ms, which
// bridges an editor renaming a file away before writing the new one. A missing directory is looked for every second
// and never created; while it is missing the snapshot carries a NotFound
// error for it.
//
// Invariants: every object in a Snapshot passed validation; Pods are
// sorted by namespace/name; no two objects of a kind share a
// namespace/name; a Watcher never sends two equal snapshots in a row.
package source
