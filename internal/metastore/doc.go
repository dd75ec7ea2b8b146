// Package metastore persists crib's metadata in one bbolt file.
//
// Schema: one top-level bucket per kind of object ("sandboxes",
// "containers"), each mapping an object id to one record. A record is a JSON
// envelope {"version": N, "data": ...}: readers refuse versions they do not
// know instead of misreading them, and a schema change bumps the version of
// that kind only.
//
// The package knows nothing of sandboxes or containers: callers own their
// record types and keep the in-memory indexes of the hot path. Each Put or
// Delete is one bbolt transaction, so a record is either wholly written or
// not at all, whenever the process dies; DeleteAll removes several records
// in one transaction, all or none. Writes that arrive while another commits
// share the next transaction and its sync to disk (group commit), each
// returning only once it is on disk.
package metastore
