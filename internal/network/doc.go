// Package network connects pod network namespaces through CNI (libcni and
// the standard plugins): it loads the first network configuration of the
// conf dir, writes a default one (a bridge with host-local IPAM and
// portmap) when the dir is empty, watches the dir so that a new or changed
// configuration applies to the next pod, and adds or deletes a pod's
// attachment.
//
// It knows nothing of CRI types: the sandbox manager passes pod identity,
// port mappings and bandwidth in this package's own types. Teardown uses
// the configuration the attachment was made with (libcni's cache), so a
// configuration change never strands an IP; it is idempotent, as CNI DEL
// is.
package network
