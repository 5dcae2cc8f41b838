package runtime

import "fmt"

// unsupportedError is a reason why a runtime cannot run a pod as written.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }
func (e *unsupportedError) Unwrap() error { return ErrUnsupported }

// Unsupported is a reason, naming the field, why a runtime cannot run a pod
// as written; it matches ErrUnsupported without repeating its text.
func Unsupported(format string, args ...any) error {
	return &unsupportedError{msg: fmt.Sprintf(format, args...)}
}
