package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	// maxBody is how much of a response body a probe reads and reports.
	maxBody = 10 << 10
	// maxRedirects bounds the same-host redirects a probe follows.
	maxRedirects = 10
)

// httpResult is what an HTTP GET action produced.
type httpResult struct {
	url        string
	statusCode int
	body       string
}

// newTransport returns a transport for probes: no proxy, no keep-alive (every
// probe opens its own connection, as the kubelet's do), and no certificate
// verification (probes check liveness, not identity).
func newTransport(dial DialFunc) *http.Transport {
	return &http.Transport{
		Proxy:             nil,
		DialContext:       dial,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet: probes do not verify certificates
	}
}

// httpGet performs the action against the container and reads at most maxBody
// bytes of the answer. Redirects are followed only to the same host; a
// redirect elsewhere is returned as the 3xx response itself.
func (h *handlers) httpGet(ctx context.Context, a *corev1.HTTPGetAction, t target, timeout time.Duration) (httpResult, error) {
	u, err := actionURL(a, t)
	if err != nil {
		return httpResult{}, err
	}
	res := httpResult{url: u.String()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, res.url, nil)
	if err != nil {
		return res, fmt.Errorf("build request %s: %w", res.url, err)
	}
	req.Header.Set("User-Agent", h.userAgent)
	req.Header.Set("Accept", "*/*")
	for _, hdr := range a.HTTPHeaders {
		if strings.EqualFold(hdr.Name, "Host") {
			req.Host = hdr.Value
			continue
		}
		req.Header.Del(hdr.Name)
	}
	for _, hdr := range a.HTTPHeaders {
		if !strings.EqualFold(hdr.Name, "Host") {
			req.Header.Add(hdr.Name, hdr.Value)
		}
	}
	tr := newTransport(h.dialer())
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: sameHostRedirects}
	resp, err := client.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return res, fmt.Errorf("read body of %s: %w", res.url, err)
	}
	res.statusCode, res.body = resp.StatusCode, string(body)
	return res, nil
}

// sameHostRedirects follows a redirect only while it stays on the host of the
// first request, and at most maxRedirects times.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return errors.New("stopped after too many redirects")
	}
	return nil
}

// actionURL builds the URL an HTTP GET action addresses.
func actionURL(a *corev1.HTTPGetAction, t target) (*url.URL, error) {
	port, err := resolvePort(a.Port, t.container)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("build probe url: unsupported scheme %q", a.Scheme)
	}
	path := a.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + net.JoinHostPort(hostOrPodIP(a.Host, t.podIP), strconv.Itoa(port)) + path)
	if err != nil {
		return nil, fmt.Errorf("build probe url: %w", err)
	}
	return u, nil
}

// httpProbe passes on a status from 200 to 399.
func (h *handlers) httpProbe(ctx context.Context, a *corev1.HTTPGetAction, t target, timeout time.Duration) (Result, string) {
	res, err := h.httpGet(ctx, a, t, timeout)
	if err != nil {
		return Failure, fmt.Sprintf("http probe: %v", err)
	}
	switch {
	case res.statusCode >= 200 && res.statusCode < 300:
		return Success, res.body
	case res.statusCode >= 300 && res.statusCode < 400:
		return Success, fmt.Sprintf("redirect not followed (status %d), body: %s", res.statusCode, res.body)
	}
	return Failure, fmt.Sprintf("http probe %s: status %d, body: %s", res.url, res.statusCode, res.body)
}
