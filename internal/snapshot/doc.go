// Package snapshot owns the unpacked image layers that overlayfs stacks into
// container root filesystems.
//
// Each layer lives once under <root>/snapshots/<chainid-hex>/fs, keyed by its
// OCI chain ID, and holds only that layer's own diff (whiteouts already in
// overlay form), so every image whose chain includes the layer shares it.
// A snapshot is unpacked into <root>/snapshots/tmp-*/, marked complete by a
// "committed" file and only then renamed into place: a directory without the
// completion file is never used, and Open removes such leftovers and any
// tmp-* directory a crash left behind.
//
// Extraction is written for hostile input: no tar entry may leave the layer
// directory through "..", an absolute name, a symlink in its parent path or
// a hard link to somewhere else; such a layer is refused and nothing of it
// is kept. The uncompressed digest (diffID) is computed while unpacking and
// must match the one the image config promises. What a layer may unpack to
// is bounded (Limits): bytes against its blob's size, free space, entries,
// name lengths; a refusal is a *LimitError, found while streaming.
//
// The package describes mounts (LowerDirs) but never mounts anything, and it
// does not decide when a snapshot is garbage: the image store does.
package snapshot
