package chronolog

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestDescribe(t *testing.T) {
	for err, want := range map[error]string{
		status.Error(codes.Unauthenticated, "unknown bearer token"): "UNAUTHENTICATED: unknown bearer token",
		status.Error(codes.PermissionDenied, "no"):                  "PERMISSION_DENIED: no",
		&trailedError{err: status.Error(codes.Unavailable, "x")}:    "UNAVAILABLE: x",
		errors.New("plain"): "plain",
	} {
		if got := Describe(err); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestCodeName(t *testing.T) {
	for name, want := range map[string]string{"OK": "OK", "DeadlineExceeded": "DEADLINE_EXCEEDED", "Unavailable": "UNAVAILABLE"} {
		if got := codeName(name); got != want {
			t.Errorf("codeName(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestTerminal(t *testing.T) {
	if !isTerminal(fmt.Errorf("wrapped: %w", Terminalf("no items"))) || isTerminal(errors.New("retry me")) {
		t.Fatal("a TerminalError is found through wrapping; a plain error is not terminal")
	}
}

func TestVersionsDiffer(t *testing.T) {
	for v, want := range map[string]bool{"0.1.0": false, "0.1.7": false, "0.2.0": true, "1.1.0": true, "": true, "dev": true} {
		if versionsDiffer(v) != want {
			t.Errorf("versionsDiffer(%q) should be %v", v, want)
		}
	}
}

func TestFatalRefusals(t *testing.T) {
	if !isFatal(status.Error(codes.Unauthenticated, ""), true) || !isFatal(status.Error(codes.PermissionDenied, ""), true) {
		t.Fatal("a bad token or a role that may not subscribe is fatal, welcomed or not")
	}
	if !isFatal(status.Error(codes.InvalidArgument, ""), false) || isFatal(status.Error(codes.InvalidArgument, ""), true) || isFatal(status.Error(codes.Unavailable, ""), false) {
		t.Fatal("INVALID_ARGUMENT is fatal only before the welcome; UNAVAILABLE never")
	}
}
