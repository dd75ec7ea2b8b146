// Package config holds crib's configuration: the TOML schema, its defaults,
// a pure Validate and Load.
//
// LoadFiles reads /etc/crib/crib.toml and then the drop-ins of
// /etc/crib/crib.d/*.toml in lexical order over Default(): tables merge key
// by key at every depth, later keys win, arrays are replaced whole. It
// records which file and line set each key, for errors and `crib config
// dump`. Every unknown key and bad value is an error naming file, line and
// key.
//
// Every key has a default, so a missing /etc/crib/crib.toml is fine and an
// empty file means Default(). Validate does no I/O: whether a path is usable
// or a binary exists is for the daemon to find out when it starts.
package config
