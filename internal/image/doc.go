// Package image is crib's image store: it pulls images from registries,
// loads them from OCI image-layout or docker-archive tarballs, keeps one
// record per image and resolves the names the kubelet and the CLI use. It
// writes images back out in either format (Save) and removes the images no
// container uses (PruneImages; pinned images never).
//
// It owns <root>/images (one versioned JSON record per image, written with an
// atomic rename and rebuilt into an in-memory index on Open) and <root>/tmp,
// and it composes internal/content (blobs under <root>/blobs) and
// internal/snapshot (unpacked layers under <root>/snapshots). It does not
// mount anything and knows nothing of CRI types.
//
// Invariants: an image's ID is the digest of its config blob; a record is
// written only after every blob it names is verified and every snapshot it
// names is committed, so a record never points at missing or half data; a
// name (tag or digest reference) belongs to at most one image. The hot path
// (List, Resolve, LowerDirs) only reads memory. Blobs and snapshots are
// deleted when no record references them and no caller retains them
// (Retain/Release), which is how containers keep their layers alive.
// Concurrent pulls of one reference with one credential share a single
// pull, which ends early only when every caller waiting for it has gone.
// That shared pull is the one record of a pull in flight: Pulls lists them
// with each layer's bytes done and total, whoever started them.
package image
