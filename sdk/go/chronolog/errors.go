package chronolog

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"google.golang.org/grpc/status"
)

// TerminalError fails a delivery without further tries: a processor's handler returns it (or an
// error wrapping it) and the owner records processor.failed at once. Any other error is retried
// per the processor's retry_delays_ms (3 tries in all by default). From an action it is reported
// as a terminal failure; the owner never retries an action by itself either way (action.failed).
type TerminalError struct {
	Err error
}

func (e *TerminalError) Error() string { return e.Err.Error() }

func (e *TerminalError) Unwrap() error { return e.Err }

// Terminal wraps err so that its delivery is not tried again (see TerminalError).
func Terminal(err error) error { return &TerminalError{Err: err} }

// Terminalf is Terminal(fmt.Errorf(format, args...)).
func Terminalf(format string, args ...any) error { return Terminal(fmt.Errorf(format, args...)) }

// isTerminal is true for an error that is, or wraps, a TerminalError.
func isTerminal(err error) bool {
	var t *TerminalError
	return errors.As(err, &t)
}

// Describe renders err in one line: `CODE: message` for a gRPC status (as the TypeScript and
// Python SDKs print them, e.g. `UNAUTHENTICATED: unknown bearer token`), its text otherwise.
func Describe(err error) string {
	if s, ok := status.FromError(err); ok && s != nil {
		return fmt.Sprintf("%s: %s", codeName(s.Code().String()), s.Message())
	}
	return err.Error()
}

// codeName turns grpc-go's name of a code (`PermissionDenied`) into the protocol's (`PERMISSION_DENIED`).
func codeName(name string) string {
	var b strings.Builder
	prev := ' '
	for _, r := range name {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
		prev = r
	}
	return b.String()
}
