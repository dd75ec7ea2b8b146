package config

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/BurntSushi/toml"
)

// merge lays src over dst: tables merge key by key at every depth, any
// other value (an array too) replaces dst's whole. set is called with the
// full key of each value src sets.
func merge(dst, src map[string]any, at toml.Key, set func(toml.Key)) {
	for _, k := range sortedKeys(src) {
		key := append(slices.Clip(at), k)
		if sub, ok := src[k].(map[string]any); ok {
			d, ok := dst[k].(map[string]any)
			if !ok {
				d = map[string]any{}
				dst[k] = d
			}
			merge(d, sub, key, set)
			continue
		}
		dst[k] = src[k]
		set(key)
	}
}

// defaultTree is Default() as tables, the bottom layer files merge over:
// so that [runtimes.runc] root = "..." keeps runc's default path.
func defaultTree() (map[string]any, error) {
	data, err := Encode(Default())
	if err != nil {
		return nil, fmt.Errorf("encode default config: %w", err)
	}
	tree := map[string]any{}
	if _, err := toml.Decode(string(data), &tree); err != nil {
		return nil, fmt.Errorf("decode default config: %w", err)
	}
	return tree, nil
}

// fromTree decodes merged tables into a Config.
func fromTree(tree map[string]any) (Config, error) {
	var buf bytes.Buffer
	var cfg Config
	if err := toml.NewEncoder(&buf).Encode(tree); err != nil {
		return cfg, fmt.Errorf("encode merged config: %w", err)
	}
	if err := Decode(buf.Bytes(), &cfg); err != nil {
		return cfg, fmt.Errorf("decode merged config: %w", err)
	}
	return cfg, nil
}
