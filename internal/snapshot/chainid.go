package snapshot

import (
	"github.com/opencontainers/go-digest"
)

// ChainID returns the chain ID of a layer whose parent chain is parent (""
// for the bottom layer) and whose diffID is diffID.
func ChainID(parent, diffID digest.Digest) digest.Digest {
	if parent == "" {
		return diffID
	}
	return digest.FromString(parent.String() + " " + diffID.String())
}

// ChainIDs returns the chain IDs of a stack of layers, bottom layer first,
// given their diffIDs in the same order.
func ChainIDs(diffIDs []digest.Digest) []digest.Digest {
	out := make([]digest.Digest, len(diffIDs))
	var parent digest.Digest
	for i, d := range diffIDs {
		parent = ChainID(parent, d)
		out[i] = parent
	}
	return out
}
