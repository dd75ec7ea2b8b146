package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"

	"github.com/BurntSushi/toml"
)

// A layer is one configuration file, parsed: its tables as maps and the
// line of each key.
type layer struct {
	file  string
	tree  map[string]any
	lines keyLines
}

// readLayer reads and parses file. A syntax error is a *FileError with
// line and column.
func readLayer(file string) (layer, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return layer{}, fmt.Errorf("read config: %w", err)
	}
	return parseLayer(file, data)
}

func parseLayer(file string, data []byte) (layer, error) {
	l := layer{file: file, tree: map[string]any{}}
	if _, err := toml.Decode(string(data), &l.tree); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return l, &FileError{File: file, Line: pe.Position.Line, Col: pe.Position.Col, Err: errors.New(pe.Message)}
		}
		return l, &FileError{File: file, Err: err}
	}
	// A scan failure costs the errors their line numbers, nothing more.
	stmts, _ := scanKeys(string(data))
	l.lines = newKeyLines(stmts)
	return l, nil
}

// check decodes every key of the layer into a Config on its own, so that
// each unknown key and each bad value is reported, at its line.
func (l layer) check() error {
	var errs []error
	seen := map[string]bool{}
	walkLeaves(l.tree, nil, func(key toml.Key, v any) {
		at, err := checkKey(key, v)
		if err == nil || seen[err.Error()] {
			return
		}
		seen[err.Error()] = true
		errs = append(errs, &FileError{File: l.file, Line: l.lines.of(at), Err: err})
	})
	slices.SortStableFunc(errs, func(a, b error) int {
		return a.(*FileError).Line - b.(*FileError).Line
	})
	return errors.Join(errs...)
}

// walkLeaves calls fn for every value of tree that is not a table, and for
// every empty table, with its full key, in key order.
func walkLeaves(tree map[string]any, at toml.Key, fn func(toml.Key, any)) {
	for _, k := range sortedKeys(tree) {
		key := append(slices.Clip(at), k)
		if sub, ok := tree[k].(map[string]any); ok && len(sub) > 0 {
			walkLeaves(sub, key, fn)
			continue
		}
		fn(key, tree[k])
	}
}

// checkKey decodes a document holding only key = v into a Config. It
// returns the key an error is about (key; for an unknown key the outermost
// unknown part of it; for a table where the schema has a value, the
// table) and the error.
func checkKey(key toml.Key, v any) (toml.Key, error) {
	md, err := decodeOne(key, v)
	if err != nil {
		for n := 1; n < len(key); n++ {
			if _, err := decodeOne(key[:n], map[string]any{}); err != nil {
				return key[:n], &FieldError{Key: key[:n].String(), Err: errors.New(decodeMessage(err))}
			}
		}
		return key, &FieldError{Key: key.String(), Err: errors.New(decodeMessage(err))}
	}
	if undec := md.Undecoded(); len(undec) > 0 {
		return undec[0], &UnknownKeyError{Key: undec[0].String()}
	}
	return key, nil
}

// decodeOne decodes a document holding only key = v into a zero Config.
func decodeOne(key toml.Key, v any) (toml.MetaData, error) {
	doc := v
	for i := len(key) - 1; i >= 0; i-- {
		doc = map[string]any{key[i]: doc}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
		return toml.MetaData{}, err
	}
	var cfg Config
	return toml.Decode(buf.String(), &cfg)
}

// decodePrefix is how BurntSushi/toml starts the errors it formats itself:
// "toml: line 1 (last key "shm_size"): ".
var decodePrefix = regexp.MustCompile(`^toml: (line \d+ )?(\(last key "(?:[^"\\]|\\.)*"\): )?`)

// decodeMessage is err without what a FieldError says anyway: the key and
// the line of the one-key document checkKey decoded.
func decodeMessage(err error) string {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return decodePrefix.ReplaceAllString(err.Error(), "")
}
