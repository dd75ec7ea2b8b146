package config

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"

	"github.com/BurntSushi/toml"
)

// cgroupParentKey is the one key whose default follows another's.
const cgroupParentKey = "cgroup_parent"

// Loaded is a configuration read from files, and where its keys came from.
type Loaded struct {
	Config Config
	// Files are the files read, in the order they were merged.
	Files []string
	// Sources maps each key a file set, dotted the way toml.Key.String
	// writes it (registries."docker.io".mirrors), to the last file that
	// set it. Keys at their default are absent.
	Sources Sources
}

// Sources maps dotted keys to where they were set.
type Sources map[string]Source

// Source is where a key was set: a file and the key's line in it (0 when
// unknown).
type Source struct {
	File string
	Line int
}

func (s Source) String() string {
	if s.Line == 0 {
		return s.File
	}
	return s.File + ":" + strconv.Itoa(s.Line)
}

// LoadFiles reads the configuration file at path and then its drop-ins
// (see DropIns) over Default(): tables merge key by key, later files win,
// arrays are replaced whole. A missing file at path is not an error when
// missingOK is set (the default path); its drop-ins still apply. A
// cgroup_parent no file sets follows the cgroup_driver the files set
// (DefaultCgroupParent).
//
// Every unknown key and bad value of every file is reported, joined, each
// a *FileError naming file, line and key; a syntax error ends the reading
// of its file and names line and column.
func LoadFiles(path string, missingOK bool) (Loaded, error) {
	l := Loaded{Config: Default(), Sources: Sources{}}
	dropIns, err := DropIns(path)
	if err != nil {
		return l, err
	}
	var (
		layers []layer
		errs   []error
	)
	for i, file := range append([]string{path}, dropIns...) {
		ly, err := readLayer(file)
		if i == 0 && missingOK && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = ly.check()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		layers = append(layers, ly)
		l.Files = append(l.Files, file)
	}
	if len(errs) > 0 {
		return l, errors.Join(errs...)
	}

	tree, err := defaultTree()
	if err != nil {
		return l, err
	}
	for _, ly := range layers {
		merge(tree, ly.tree, nil, func(key toml.Key) {
			l.Sources[key.String()] = Source{File: ly.file, Line: ly.lines.of(key)}
		})
	}
	cfg, err := fromTree(tree)
	if err != nil {
		return l, fmt.Errorf("config %s: %w", path, err)
	}
	if _, set := l.Sources[cgroupParentKey]; !set {
		cfg.CgroupParent = DefaultCgroupParent(cfg.CgroupDriver)
	}
	l.Config = cfg
	return l, nil
}

// Load is LoadFiles without the provenance.
func Load(path string, missingOK bool) (Config, error) {
	l, err := LoadFiles(path, missingOK)
	return l.Config, err
}

// Validate validates the configuration; each error about a key a file set
// names that file and the key's line there.
func (l Loaded) Validate() error {
	err := l.Config.Validate()
	if err == nil {
		return nil
	}
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = slices.Clone(joined.Unwrap())
	}
	for i, e := range errs {
		var fe *FieldError
		if !errors.As(e, &fe) {
			continue
		}
		if src, ok := l.Sources[fe.Key]; ok {
			errs[i] = &FileError{File: src.File, Line: src.Line, Err: e}
		}
	}
	return errors.Join(errs...)
}
