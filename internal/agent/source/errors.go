package source

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
)

// classError is a manifest problem whose message is the whole story (no
// ": invalid argument" tail) and whose class is one of errdefs'.
type classError struct {
	msg   string
	class error
}

func (e *classError) Error() string { return e.msg }

func (e *classError) Unwrap() error { return e.class }

// invalidf is an errdefs.ErrInvalidArgument.
func invalidf(format string, args ...any) error {
	return &classError{msg: fmt.Sprintf(format, args...), class: errdefs.ErrInvalidArgument}
}

// existsf is an errdefs.ErrAlreadyExists.
func existsf(format string, args ...any) error {
	return &classError{msg: fmt.Sprintf(format, args...), class: errdefs.ErrAlreadyExists}
}

// fieldError is one invalid field, named by its path the way the API
// server names it: "spec.containers[0].image: required value".
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

func (e *fieldError) Unwrap() error { return errdefs.ErrInvalidArgument }

// objectError is every problem of one object: `pod "web": a: ...; b: ...`.
type objectError struct {
	where string
	errs  []error
}

func (e *objectError) Error() string { return e.where + ": " + joinErrors(e.errs).Error() }

func (e *objectError) Unwrap() []error { return append([]error{errdefs.ErrInvalidArgument}, e.errs...) }

// multiError joins errors on one line with "; ", unlike errors.Join.
type multiError []error

func (m multiError) Error() string {
	msgs := make([]string, len(m))
	for i, err := range m {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (m multiError) Unwrap() []error { return m }

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return multiError(errs)
}
