package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
)

const recordVersion = 1

// record is the on-disk form of one image: <root>/images/<id-hex>.json.
// Fields are only ever added; Version changes when a field changes meaning.
type record struct {
	Version     int             `json:"version"`
	ID          string          `json:"id"`
	RepoTags    []string        `json:"repoTags,omitempty"`
	RepoDigests []string        `json:"repoDigests,omitempty"`
	Size        int64           `json:"size"`
	Config      imagespec.Image `json:"config"`
	ChainIDs    []string        `json:"chainIDs"`
	// Blobs are the content digests the image holds: manifest list or
	// index, manifest, config and layer blobs. Garbage collection counts
	// references to them.
	Blobs  []string `json:"blobs"`
	Pinned bool     `json:"pinned,omitempty"`
	// Annotations are the image manifest's.
	Annotations map[string]string `json:"annotations,omitempty"`
}

func (r *record) image() Image {
	return Image{
		ID:          r.ID,
		RepoTags:    append([]string(nil), r.RepoTags...),
		RepoDigests: append([]string(nil), r.RepoDigests...),
		Size:        r.Size,
		Config:      r.Config,
		ChainIDs:    append([]string(nil), r.ChainIDs...),
		Pinned:      r.Pinned,
		Annotations: maps.Clone(r.Annotations),
	}
}

func (r *record) clone() *record {
	c := *r
	c.RepoTags = append([]string(nil), r.RepoTags...)
	c.RepoDigests = append([]string(nil), r.RepoDigests...)
	c.ChainIDs = append([]string(nil), r.ChainIDs...)
	c.Blobs = append([]string(nil), r.Blobs...)
	c.Annotations = maps.Clone(r.Annotations)
	return &c
}

// names returns every tag and digest reference of the image.
func (r *record) names() []string {
	return append(append([]string(nil), r.RepoTags...), r.RepoDigests...)
}

// addName adds a tag or digest reference unless present.
func (r *record) addName(n string) {
	list := &r.RepoTags
	if isDigestRef(n) {
		list = &r.RepoDigests
	}
	for _, have := range *list {
		if have == n {
			return
		}
	}
	*list = append(*list, n)
}

// dropName removes a tag or digest reference.
func (r *record) dropName(n string) {
	keep := func(list []string) []string {
		out := list[:0:0]
		for _, have := range list {
			if have != n {
				out = append(out, have)
			}
		}
		return out
	}
	r.RepoTags = keep(r.RepoTags)
	r.RepoDigests = keep(r.RepoDigests)
}

type recordDir string

func (d recordDir) path(id string) string {
	return filepath.Join(string(d), strings.TrimPrefix(id, "sha256:")+".json")
}

// write persists r atomically: temp file, fsync, rename.
func (d recordDir) write(r *record) error {
	r.Version = recordVersion
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode image record %s: %w", r.ID, err)
	}
	f, err := os.CreateTemp(string(d), ".tmp-")
	if err != nil {
		return fmt.Errorf("write image record %s: %w", r.ID, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, d.path(r.ID))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write image record %s: %w", r.ID, err)
	}
	return nil
}

func (d recordDir) remove(id string) error {
	if err := os.Remove(d.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove image record %s: %w", id, err)
	}
	return nil
}

// load reads every record, in file name order, removing temp files a crash
// left behind.
func (d recordDir) load() ([]*record, error) {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return nil, fmt.Errorf("create image record dir: %w", err)
	}
	entries, err := os.ReadDir(string(d))
	if err != nil {
		return nil, fmt.Errorf("read image record dir: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var out []*record
	for _, e := range entries {
		p := filepath.Join(string(d), e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") {
			if err := os.Remove(p); err != nil {
				return nil, fmt.Errorf("remove stale image record: %w", err)
			}
			continue
		}
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read image record %s: %w", e.Name(), err)
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("decode image record %s: %w", e.Name(), err)
		}
		if r.Version != recordVersion {
			return nil, fmt.Errorf("image record %s: unsupported version %d", e.Name(), r.Version)
		}
		out = append(out, &r)
	}
	return out, nil
}
