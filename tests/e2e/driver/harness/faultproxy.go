package harness

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// FaultProxy is an HTTPS reverse proxy on loopback between Gantry's processes and kube-apiserver
// that a test controls: it forwards every request (the caller's bearer token included) and, on
// command, misbehaves the way a real control plane or network does:
//
//   - DropWatches ends every watch stream in flight, abruptly (the connection is cut mid-body) or
//     cleanly (the body ends, as when the server's timeoutSeconds elapse);
//   - a window of error answers: 429 Too Many Requests (with Retry-After) or 500, to every
//     request or only to writes, without forwarding them;
//   - a window of lost answers: a write is forwarded and carried out by the API server, then the
//     connection is cut before the answer reaches the client (the client cannot tell whether it
//     happened: what a timeout or a reset after sending looks like);
//   - a window of slow answers: a request is forwarded, and its answer held back for a delay (past
//     the client's request timeout when the delay is long enough);
//   - a window of expired watches: a watch is answered with an ERROR event carrying 410 Gone, as
//     the API server does for a resourceVersion older than its history, forcing a relist.
//
// The proxy serves TLS with a certificate of its own (CertFile), so that the clients verify it as
// they verify the API server.
type FaultProxy struct {
	URL      string // https://127.0.0.1:PORT
	CertFile string // PEM of the proxy's self-signed certificate (a kubeconfig's CA)

	upstream *url.URL
	client   *http.Client
	server   *http.Server
	listener net.Listener

	mu      sync.Mutex
	watches map[*watchStream]struct{}
	windows []faultWindow
	counts  map[string]int // faults injected, by kind
	total   int            // requests seen
}

// FaultKind names what a window does to the requests it applies to.
type FaultKind string

const (
	Fault429     FaultKind = "429"
	Fault500     FaultKind = "500"
	FaultLose    FaultKind = "lose-answer"
	FaultSlow    FaultKind = "slow"
	FaultGone410 FaultKind = "watch-410"
)

// FaultScope selects the requests a window applies to.
type FaultScope string

const (
	ScopeAll    FaultScope = "all"    // every request (watches too, where the kind applies)
	ScopeWrites FaultScope = "writes" // POST, PUT, PATCH, DELETE
	ScopeReads  FaultScope = "reads"  // GET that is not a watch
)

type faultWindow struct {
	kind  FaultKind
	scope FaultScope
	until time.Time
	delay time.Duration // FaultSlow
	every int           // apply to one request in `every` (1: all)
	seen  int
}

type watchStream struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	abrupt bool
	ended  bool
}

// StartFaultProxy listens on a free loopback port and forwards to the API server of `env`
// (its address and CA from the admin kubeconfig). It writes its certificate into dir.
func StartFaultProxy(env *Env, dir string) (*FaultProxy, error) {
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig("admin"))
	if err != nil {
		return nil, err
	}
	cluster := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	upstream, err := url.Parse(cluster.Server)
	if err != nil {
		return nil, err
	}
	caPEM := cluster.CertificateAuthorityData
	if len(caPEM) == 0 {
		if caPEM, err = os.ReadFile(cluster.CertificateAuthority); err != nil {
			return nil, err
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("fault proxy: no certificate in the API server's CA")
	}
	certPEM, keyPEM, err := selfSignedLoopbackCert()
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{
		CertFile: filepath.Join(dir, "fault-proxy.crt"),
		upstream: upstream,
		watches:  map[*watchStream]struct{}{},
		counts:   map[string]int{},
	}
	if err := os.WriteFile(p.CertFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	p.client = &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: roots},
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		// Answers are passed on as they come (gzip included).
		DisableCompression: true,
	}}
	p.listener, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.URL = "https://" + p.listener.Addr().String()
	p.server = &http.Server{
		Handler: http.HandlerFunc(p.serve),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair},
			NextProtos: []string{"http/1.1"}},
		// HTTP/1.1 only, as Gantry's transport speaks.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	go p.server.ServeTLS(p.listener, "", "")
	return p, nil
}

// Close stops the proxy and every stream through it.
func (p *FaultProxy) Close() {
	p.DropWatches(true)
	p.server.Close()
}

// Kubeconfig writes a kubeconfig for `user` (the token of env's kubeconfig for that user) that
// reaches the API server through the proxy, and returns its path.
func (p *FaultProxy) Kubeconfig(env *Env, user, path string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig(user))
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		c.Server = p.URL
		c.CertificateAuthority = p.CertFile
		c.CertificateAuthorityData = nil
	}
	return path, clientcmd.WriteToFile(*cfg, path)
}

// DropWatches ends every watch in flight now: abrupt cuts the connection mid-body, otherwise the
// body ends cleanly. Returns how many were ended.
func (p *FaultProxy) DropWatches(abrupt bool) int {
	p.mu.Lock()
	streams := make([]*watchStream, 0, len(p.watches))
	for w := range p.watches {
		streams = append(streams, w)
	}
	p.mu.Unlock()
	for _, w := range streams {
		w.mu.Lock()
		w.abrupt, w.ended = abrupt, true
		w.mu.Unlock()
		w.cancel()
	}
	if len(streams) > 0 {
		p.count("watch-drop", len(streams))
	}
	return len(streams)
}

// Window applies `kind` to the requests of `scope` for `length` from now (one request in `every`;
// `delay` for FaultSlow). Windows may overlap; the first one opened that applies wins.
func (p *FaultProxy) Window(kind FaultKind, scope FaultScope, length, delay time.Duration, every int) {
	if every < 1 {
		every = 1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.windows = append(p.windows, faultWindow{kind: kind, scope: scope, until: time.Now().Add(length),
		delay: delay, every: every})
}

// Calm ends every window at once (streams are left alone).
func (p *FaultProxy) Calm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.windows = nil
}

// Counts returns the faults injected so far by kind, and the requests seen.
func (p *FaultProxy) Counts() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out, p.total
}

func (p *FaultProxy) count(kind string, n int) {
	p.mu.Lock()
	p.counts[kind] += n
	p.mu.Unlock()
}

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "1" || w == "true"
}

// pick returns the window applying to this request, if any (and counts the request).
func (p *FaultProxy) pick(r *http.Request, watch bool) *faultWindow {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	live := p.windows[:0]
	for _, w := range p.windows {
		if now.Before(w.until) {
			live = append(live, w)
		}
	}
	p.windows = live
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	for i := range p.windows {
		w := &p.windows[i]
		switch w.scope {
		case ScopeWrites:
			if !write {
				continue
			}
		case ScopeReads:
			if write || watch {
				continue
			}
		}
		switch w.kind {
		case FaultGone410:
			if !watch {
				continue
			}
		case FaultLose, FaultSlow:
			if watch {
				continue
			}
		}
		w.seen++
		if (w.seen-1)%w.every != 0 {
			continue
		}
		p.counts[string(w.kind)]++
		c := *w
		return &c
	}
	return nil
}

func writeStatus(rw http.ResponseWriter, code int, reason, message string) {
	rw.Header().Set("Content-Type", "application/json")
	if code == http.StatusTooManyRequests {
		rw.Header().Set("Retry-After", "1")
	}
	rw.WriteHeader(code)
	fmt.Fprintf(rw, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`,
		message, reason, code)
}

func (p *FaultProxy) serve(rw http.ResponseWriter, r *http.Request) {
	watch := isWatch(r)
	if f := p.pick(r, watch); f != nil {
		switch f.kind {
		case Fault429:
			writeStatus(rw, http.StatusTooManyRequests, "TooManyRequests", "fault proxy: too many requests, please try again later")
			return
		case Fault500:
			writeStatus(rw, http.StatusInternalServerError, "InternalError", "fault proxy: an error on the server")
			return
		case FaultGone410:
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusOK)
			fmt.Fprint(rw, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"fault proxy: too old resource version","reason":"Expired","code":410}}`+"\n")
			return
		case FaultLose:
			// Carried out, then the answer is lost.
			if resp, err := p.forward(r.Context(), r); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			panic(http.ErrAbortHandler)
		case FaultSlow:
			resp, err := p.forward(r.Context(), r)
			if err != nil {
				panic(http.ErrAbortHandler)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				panic(http.ErrAbortHandler)
			}
			select {
			case <-time.After(f.delay):
			case <-r.Context().Done():
				panic(http.ErrAbortHandler)
			}
			copyHeader(rw.Header(), resp.Header)
			rw.WriteHeader(resp.StatusCode)
			rw.Write(body)
			return
		}
	}
	if !watch {
		resp, err := p.forward(r.Context(), r)
		if err != nil {
			// The API server is unreachable (restarting): so is the proxy, to the client.
			panic(http.ErrAbortHandler)
		}
		defer resp.Body.Close()
		copyHeader(rw.Header(), resp.Header)
		rw.WriteHeader(resp.StatusCode)
		if _, err := io.Copy(rw, resp.Body); err != nil {
			// Cut upstream (kube-apiserver killed): cut here too, not a body ended cleanly.
			panic(http.ErrAbortHandler)
		}
		return
	}
	// A watch: streamed, and registered so that DropWatches can end it.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ws := &watchStream{cancel: cancel}
	p.mu.Lock()
	p.watches[ws] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.watches, ws)
		p.mu.Unlock()
	}()
	resp, err := p.forward(ctx, r)
	if err != nil {
		ws.mu.Lock()
		abrupt := ws.ended && ws.abrupt
		ws.mu.Unlock()
		if abrupt {
			panic(http.ErrAbortHandler)
		}
		if ctx.Err() != nil {
			return
		}
		panic(http.ErrAbortHandler)
	}
	defer resp.Body.Close()
	copyHeader(rw.Header(), resp.Header)
	rw.WriteHeader(resp.StatusCode)
	flusher, _ := rw.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	buf := make([]byte, 32*1024)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := rw.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			ws.mu.Lock()
			abrupt := ws.ended && ws.abrupt
			ws.mu.Unlock()
			if abrupt {
				panic(http.ErrAbortHandler)
			}
			return
		}
	}
}

func (p *FaultProxy) forward(ctx context.Context, r *http.Request) (*http.Response, error) {
	u := *p.upstream
	u.Path = r.URL.Path
	u.RawPath = r.URL.RawPath
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), r.Body)
	if err != nil {
		return nil, err
	}
	copyHeader(out.Header, r.Header)
	out.ContentLength = r.ContentLength
	return p.client.Do(out)
}

var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Transfer-Encoding": true, "Te": true, "Trailer": true, "Upgrade": true, "Content-Length": true}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[k] {
			continue
		}
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// selfSignedLoopbackCert makes a certificate for 127.0.0.1 and localhost, valid for a day.
func selfSignedLoopbackCert() ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "gantry-e2e-fault-proxy"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}
