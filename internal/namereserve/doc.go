// Package namereserve hands out names (a sandbox's or a container's CRI name)
// to one creation at a time, and lets the kubelet's retry of a creation that
// timed out on its side pick up the first attempt's result instead of
// failing with "name is reserved".
//
// A name is held from Reserve until the object is deleted (Release) or its
// creation fails. A creation's result is delivered to exactly one caller:
// the original one if it was still waiting, else the first retry; any later
// request for the name gets errdefs.ErrAlreadyExists.
package namereserve
