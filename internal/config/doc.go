// Package config holds crib's configuration: the TOML schema, its defaults,
// a pure Validate and Load.
//
// Every key has a default, so a missing /etc/crib/crib.toml is fine and an
// empty file means Default(). Validate does no I/O: whether a path is usable
// or a binary exists is for the daemon to find out when it starts.
package config
