package config

import (
	"fmt"
	"strconv"
)

// A FieldError is a bad value of one key. Key is dotted the way
// toml.Key.String writes it: network.subnet, registries."docker.io".mirrors.
type FieldError struct {
	Key string
	Err error
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// An UnknownKeyError is a key the schema does not have, usually a typo.
type UnknownKeyError struct {
	Key string
}

func (e *UnknownKeyError) Error() string { return fmt.Sprintf("unknown key %q", e.Key) }

// A FileError places an error in a configuration file. Line and Col start
// at 1; 0 means unknown.
type FileError struct {
	File      string
	Line, Col int
	Err       error
}

func (e *FileError) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			pos += ":" + strconv.Itoa(e.Col)
		}
	}
	return pos + ": " + e.Err.Error()
}

func (e *FileError) Unwrap() error { return e.Err }
