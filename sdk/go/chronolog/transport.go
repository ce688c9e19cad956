package chronolog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// Options say how to reach the owners.
type Options struct {
	// URL of the owner, e.g. `http://127.0.0.1:50051` or `https://owner.example:50051`; or several
	// owners (one leads, the others are standbys) as a comma-separated list. Calls go to the
	// leader: a standby's refusal is followed to the URL it names, an owner that cannot be reached
	// to the next one.
	URL string
	// Token is a principal's bearer token; "" for an owner without a config.
	Token string
	// CA is an extra PEM CA for owners with a private TLS certificate.
	CA []byte
	// FailoverTimeout bounds how long a call that nothing was done of (a standby refused it, no
	// owner could be reached) is made again at the leader or the next owner (default
	// DefaultFailoverTimeout; negative: never again).
	FailoverTimeout time.Duration
}

// bearer attaches `authorization: Bearer <token>` to every call, plaintext owners included.
type bearer struct {
	token string
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// newOwners checks o and prepares a connection to each owner (made on first use).
func newOwners(o Options) (*owners, error) {
	if o.URL == "" {
		return nil, errors.New("owner url is required, e.g. http://127.0.0.1:50051")
	}
	urls, err := ownerURLs(o.URL)
	if err != nil {
		return nil, err
	}
	var roots *x509.CertPool
	if len(o.CA) > 0 {
		if roots, err = x509.SystemCertPool(); err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(o.CA) {
			return nil, errors.New("ca: no PEM certificate found")
		}
	}
	failover := o.FailoverTimeout
	if failover == 0 {
		failover = DefaultFailoverTimeout
	}
	return &owners{urls: urls, conns: map[string]*grpc.ClientConn{}, failoverTimeout: failover, dial: func(u string) (*grpc.ClientConn, error) { return dial(u, o.Token, roots) }}, nil
}

// dial makes a connection to the owner at u (checked by ownerURLs); it connects on first use.
func dial(u, token string, roots *x509.CertPool) (*grpc.ClientConn, error) {
	p, _ := url.Parse(u)
	host, port := p.Hostname(), p.Port()
	creds := insecure.NewCredentials()
	if p.Scheme == "https" {
		creds = credentials.NewTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
		if port == "" {
			port = "443"
		}
	} else if port == "" {
		port = "80"
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20)),
		// grpc-go's own reconnect backoff (up to 120 s by default) would sit under the executor's:
		// kept short so that a restarted owner is found within seconds.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 200 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second}, MinConnectTimeout: 5 * time.Second}),
		// A connection with a call or stream open pings the owner after 10 s without data (grpc-go's
		// least: it raises anything shorter to 10 s) and is closed when the ping is not answered
		// within 1.5 s: a frozen owner (paused, hung, cut off) keeps its TCP connections open, and a
		// stream to it would wait forever. A Go client leaves a frozen leader within about 11.5 s,
		// where the TypeScript and Python ones take 3 s.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 1500 * time.Millisecond}),
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: token}))
	}
	return grpc.NewClient(net.JoinHostPort(host, port), opts...)
}
