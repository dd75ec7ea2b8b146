package statusapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxResponse bounds what the client reads from one answer.
const maxResponse = 64 << 20

// Client reads the agent's status API; the CLI's `crib pods` and `crib ps`
// use it.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a client for the API at baseURL, e.g.
// "http://127.0.0.1:10255".
func NewClient(baseURL string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{}}
}

// Pods returns every pod with its status.
func (c *Client) Pods(ctx context.Context) (*corev1.PodList, error) {
	var list corev1.PodList
	if err := c.get(ctx, "/pods", &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// Pod returns one pod; errdefs.ErrNotFound when the agent has none by that
// name.
func (c *Client) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var pod corev1.Pod
	path := "/pods/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
	if err := c.get(ctx, path, &pod); err != nil {
		return nil, err
	}
	return &pod, nil
}

// Events returns the agent's recent events, oldest first.
func (c *Client) Events(ctx context.Context) (*corev1.EventList, error) {
	var list corev1.EventList
	if err := c.get(ctx, "/events", &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// Manifests returns the manifests the agent could not use.
func (c *Client) Manifests(ctx context.Context) ([]SourceError, error) {
	var errs []SourceError
	if err := c.get(ctx, "/manifests", &errs); err != nil {
		return nil, err
	}
	return errs, nil
}

// Healthz returns nil when the agent reports itself healthy.
func (c *Client) Healthz(ctx context.Context) error {
	resp, err := c.do(ctx, "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("agent health: %s: %w", strings.TrimSpace(string(body)), errdefs.ErrUnavailable)
	}
	return nil
}

func (c *Client) do(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", path, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", path, err)
	}
	return resp, nil
}

func (c *Client) get(ctx context.Context, path string, into any) error {
	resp, err := c.do(ctx, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("get %s: read body: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return statusError(path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("get %s: decode: %w", path, err)
	}
	return nil
}

// statusError turns an error answer into an error of the matching class.
func statusError(path string, code int, body []byte) error {
	msg := strings.TrimSpace(string(body))
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		msg = st.Message
	}
	var class error = errdefs.ErrUnknown
	switch code {
	case http.StatusNotFound:
		class = errdefs.ErrNotFound
	case http.StatusMethodNotAllowed:
		class = errdefs.ErrNotImplemented
	case http.StatusInternalServerError, http.StatusServiceUnavailable:
		class = errdefs.ErrUnavailable
	}
	return fmt.Errorf("get %s: %s (HTTP %d): %w", path, msg, code, class)
}
