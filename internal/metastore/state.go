package metastore

import (
	"encoding/json"

	"fmt"
	"time"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
)

// DB is crib's metadata database.
type DB struct {
	bolt   *bolt.DB
	writes committer
}

// Open opens (creating if needed) the database at path.
func Open(path string) (*DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open metadata %s: %w", path, err)
	}
	return &DB{bolt: db, writes: committer{db: db}}, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.bolt.Close() }

type envelope struct {
	Version int             `json:"version"`
	Data    json.RawMessage `json:"data"`
}

// Put writes v as the record id of kind at version.
func (d *DB) Put(kind, id string, version int, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", kind, id, err)
	}
	rec, err := json.Marshal(envelope{Version: version, Data: data})
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", kind, id, err)
	}
	err = d.writes.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(kind))
		if err != nil {
			return err
		}
		return b.Put([]byte(id), rec)
	})
	if err != nil {
		return fmt.Errorf("write %s %s: %w", kind, id, err)
	}
	return nil
}

// Delete removes the record id of kind; a missing record is not an error.
func (d *DB) Delete(kind, id string) error {
	err := d.writes.update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(kind))
		if b == nil {
			return nil
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", kind, id, err)
	}
	return nil
}

// DeleteAll removes the records ids of kind in one transaction, so with one
// sync to disk: all go, or, should the process die first, none. Missing
// records are not an error.
func (d *DB) DeleteAll(kind string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := d.writes.update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(kind))
		if b == nil {
			return nil
		}
		for _, id := range ids {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete %d %s: %w", len(ids), kind, err)
	}
	return nil
}

// ForEach calls fn with every record of kind. decode unmarshals the record's
// data into its argument after checking that the record's version is one the
// caller accepts.
func (d *DB) ForEach(kind string, versions []int, fn func(id string, decode func(v any) error) error) error {
	return d.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(kind))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, raw []byte) error {
			id := string(k)
			decode := func(v any) error {
				var env envelope
				if err := json.Unmarshal(raw, &env); err != nil {
					return fmt.Errorf("decode %s %s: %w", kind, id, err)
				}
				if !accepted(env.Version, versions) {
					return fmt.Errorf("decode %s %s: record version %d is not one of %v: %w",
						kind, id, env.Version, versions, errdefs.ErrNotImplemented)
				}
				if err := json.Unmarshal(env.Data, v); err != nil {
					return fmt.Errorf("decode %s %s: %w", kind, id, err)
				}
				return nil
			}
			return fn(id, decode)
		})
	})
}

func accepted(v int, versions []int) bool {
	for _, ok := range versions {
		if v == ok {
			return true
		}
	}
	return false
}
