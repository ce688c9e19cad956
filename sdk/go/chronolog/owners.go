package chronolog

// Several owners behind one client: one leads, the others are standbys that refuse every call
// with UNAVAILABLE `this owner is a standby; the leader is at <url>` and trailer
// `chronolog-leader: <url>`. Calls go to the owner believed to lead; a standby's refusal moves
// them to the leader it names, and an owner that cannot be reached to the next one.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// leaderKey is the metadata key in which an owner names the leader's URL (a standby's refusals).
const leaderKey = "chronolog-leader"

// DefaultFailoverTimeout is how long a call that nothing was done of is tried across the owners
// before its error is the caller's, by default.
const DefaultFailoverTimeout = 15 * time.Second

// failureKind says what a failed call tells about its owner.
type failureKind int

const (
	// standby: a standby refused the call (nothing was done), naming the leader when it knows it.
	standby failureKind = iota + 1
	// unreached: no owner got the call (connection refused, host not found, stream refused).
	unreached
	// lost: the owner went away, stopped answering pings or is stopping during the call: it may have run.
	lost
)

// ownerFailure is why a call failed, when it is about the owner rather than the request.
type ownerFailure struct {
	kind   failureKind
	leader string
}

var leaderInMessage = regexp.MustCompile(`the leader is at (\S+)$`)

// grpc-go's words for a connection never made (nothing was sent), and for one lost during a call.
var (
	unreachedWords = []string{"Error while dialing", "connection refused", "no such host", "REFUSED_STREAM", "produced zero addresses"}
	lostWords      = []string{"error reading from server", "transport is closing", "connection reset", "broken pipe", "EOF", "keepalive ping", "GOAWAY", "RST_STREAM", "owner is stopping"}
)

// trailedError is a call's error with the trailer the owner sent with it (a standby names the
// leader there). It is the same gRPC status to status.FromError and status.Code.
type trailedError struct {
	err     error
	trailer metadata.MD
}

func (e *trailedError) Error() string              { return e.err.Error() }
func (e *trailedError) Unwrap() error              { return e.err }
func (e *trailedError) GRPCStatus() *status.Status { return status.Convert(e.err) }

// ownerFailureOf is the owner failure behind a call's error, or nil when it is the owner's answer.
func ownerFailureOf(err error) *ownerFailure {
	s, ok := status.FromError(err)
	if !ok || s == nil {
		return nil
	}
	var trailer metadata.MD
	var te *trailedError
	if errors.As(err, &te) {
		trailer = te.trailer
	}
	message := s.Message()
	if s.Code() == codes.Unavailable {
		named := trailer.Get(leaderKey)
		if len(named) > 0 || strings.HasPrefix(message, "this owner is a standby") {
			leader := ""
			if len(named) > 0 {
				leader = named[0]
			} else if m := leaderInMessage.FindStringSubmatch(message); m != nil {
				leader = m[1]
			}
			if !isHTTPURL(leader) {
				leader = ""
			}
			return &ownerFailure{kind: standby, leader: leader}
		}
		if containsAny(message, unreachedWords) {
			return &ownerFailure{kind: unreached}
		}
	}
	if (s.Code() == codes.Unavailable || s.Code() == codes.Internal) && containsAny(message, lostWords) {
		return &ownerFailure{kind: lost}
	}
	return nil
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func isHTTPURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != ""
}

// ownerURLs splits a comma-separated list of owner URLs and checks each (http:// or https://).
func ownerURLs(list string) ([]string, error) {
	var urls []string
	for i, u := range strings.Split(list, ",") {
		u = strings.TrimSpace(u)
		if !isHTTPURL(u) {
			return nil, fmt.Errorf("owner url %q (entry %d): expected http://host:port or https://host:port", u, i)
		}
		urls = append(urls, u)
	}
	return urls, nil
}

func sameOwner(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// owners are the owners a client knows (those given, then leaders named by standbys), the one
// calls go to now, and a connection to each (made on first use). It is the grpc.ClientConnInterface
// the generated clients use: each call goes to the current owner.
type owners struct {
	mu              sync.Mutex
	urls            []string
	current         int
	conns           map[string]*grpc.ClientConn
	dial            func(url string) (*grpc.ClientConn, error)
	failoverTimeout time.Duration
	closed          bool
}

// pick is the owner calls go to now, and its connection.
func (o *owners) pick() (string, *grpc.ClientConn, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return "", nil, status.Error(codes.Canceled, "the client is closed")
	}
	u := o.urls[o.current]
	conn := o.conns[u]
	if conn == nil {
		var err error
		if conn, err = o.dial(u); err != nil {
			return "", nil, err
		}
		o.conns[u] = conn
	}
	return u, conn, nil
}

// several is true when more than one owner is known.
func (o *owners) several() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.urls) > 1
}

// route moves on after failure f of a call made at u: to the leader a standby named (added to the
// owners when it was not given), else to the next owner, unless another call already moved on.
func (o *owners) route(u string, f *ownerFailure) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f.kind == standby && f.leader != "" && !sameOwner(f.leader, u) {
		for i, known := range o.urls {
			if sameOwner(known, f.leader) {
				o.current = i
				return
			}
		}
		o.urls = append(o.urls, f.leader)
		o.current = len(o.urls) - 1
	} else if o.urls[o.current] == u {
		o.current = (o.current + 1) % len(o.urls)
	}
}

// routeAfter routes after err of a call made at u when it is an owner failure (returned).
func (o *owners) routeAfter(err error, u string) *ownerFailure {
	f := ownerFailureOf(err)
	if f != nil {
		o.route(u, f)
	}
	return f
}

// retries is true when a call that failed so may be made again: nothing was done and a leader
// (named, or to come) or another owner may take it; or, when repeatable (making it twice does what
// making it once does), the owner was lost during it.
func (o *owners) retries(f *ownerFailure, repeatable bool) bool {
	return f.kind == standby || ((f.kind == unreached || (f.kind == lost && repeatable)) && o.several())
}

// pause is the wait before try n (1: the first retry) of one call: none until each owner had its
// turn, then 100 ms doubling up to 1 s.
func (o *owners) pause(n int) time.Duration {
	o.mu.Lock()
	k := len(o.urls)
	o.mu.Unlock()
	if n < k {
		return 0
	}
	d := 100 * time.Millisecond << min(n-k, 4)
	return min(d, time.Second)
}

func (o *owners) close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	var errs []error
	for _, c := range o.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

var repeatableMethod = regexp.MustCompile(`/(Get|List|Read|Find)[A-Z][^/]*$`)

// repeatable is true for a unary call that may be made twice for once: a read, or an Emit naming
// its event's id (the owner answers a second one from the log).
func repeatable(method string, args any) bool {
	if repeatableMethod.MatchString(method) {
		return true
	}
	type withID interface{ GetId() string }
	e, ok := args.(withID)
	return strings.HasSuffix(method, "/Emit") && ok && e.GetId() != ""
}

// Invoke makes a unary call at the current owner until it succeeds or its failure is the
// caller's: a standby's refusal or an owner not reached is made again at the leader named or the
// next owner, with pauses, for up to the failover timeout (and within ctx's deadline).
func (o *owners) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	started := time.Now()
	deadline, hasDeadline := ctx.Deadline()
	for n := 1; ; n++ {
		u, conn, err := o.pick()
		if err != nil {
			return err
		}
		var trailer metadata.MD
		err = conn.Invoke(ctx, method, args, reply, append(opts, grpc.Trailer(&trailer))...)
		if err == nil {
			return nil
		}
		err = &trailedError{err: err, trailer: trailer}
		f := o.routeAfter(err, u)
		if f == nil {
			return err
		}
		pause := o.pause(n)
		at := time.Now().Add(pause)
		if !o.retries(f, repeatable(method, args)) || ctx.Err() != nil || at.Sub(started) > o.failoverTimeout || (hasDeadline && !at.Before(deadline)) {
			return err
		}
		if sleep(ctx, pause) != nil {
			return err
		}
	}
}

// NewStream opens a stream at the current owner; the error that ends it routes the owners (see
// route). Streams are not opened again here: their users do it.
func (o *owners) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	u, conn, err := o.pick()
	if err != nil {
		return nil, err
	}
	stream, err := conn.NewStream(ctx, desc, method, opts...)
	if err != nil {
		o.routeAfter(err, u)
		return nil, err
	}
	return &routedStream{ClientStream: stream, owners: o, url: u}, nil
}

// routedStream is a stream whose ending error carries its trailer and routes the owners.
type routedStream struct {
	grpc.ClientStream
	owners *owners
	url    string
}

func (s *routedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil && err != io.EOF {
		err = &trailedError{err: err, trailer: s.Trailer()}
		s.owners.routeAfter(err, s.url)
	}
	return err
}

// sleep waits d, or less when ctx ends first (its error then).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
