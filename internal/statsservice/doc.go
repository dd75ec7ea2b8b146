// Package statsservice is crib's stats service: the resource usage of containers,
// pods and the runtime's filesystems, as the CRI's stats RPCs report it.
//
// It reads cgroups and measures writable layers through package kernelstats,
// keeps each container's and pod's previous CPU reading to give CPU rates,
// and finds the filesystem the writable layers live on. It returns domain
// values (stats samples, disk usage, rates); turning them into CRI
// messages is the gRPC edge's job, which therefore does no I/O.
//
// It owns no cgroup and no directory: it only reads. A container or pod
// whose cgroup is not there (not made yet, or already removed) has no
// cgroup figures; a writable layer already removed counts as empty. A
// figure that cannot be read is left out and the error says why, while the
// usage returned is as complete as it could be made.
package statsservice
