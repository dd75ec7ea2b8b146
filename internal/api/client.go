package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/crib-dev/crib/internal/image"
)

// LoadedImage is one image a load put into the store.
type LoadedImage struct {
	ID       string   `json:"id"`
	RepoTags []string `json:"repoTags"`
}

// Client talks to a daemon's API socket.
type Client struct {
	http *http.Client
}

// NewClient returns a client of the API at socket.
func NewClient(socket string) *Client {
	return &Client{http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}}
}

// ErrNoDaemon says no daemon answers on the socket.
var ErrNoDaemon = errors.New("no crib daemon answers")

// imagePath is the URL of one image; the reference is one path segment.
func imagePath(ref, suffix string) string {
	return "http://crib/v1/images/" + url.PathEscape(ref) + suffix
}

// do sends a request and returns the response when its status is want;
// otherwise it returns the daemon's message as the error.
func (c *Client) do(ctx context.Context, what, method, u string, body io.Reader, contentType string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			return nil, fmt.Errorf("%w: %v", ErrNoDaemon, err)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode != want {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &StatusError{Code: resp.StatusCode, Msg: fmt.Sprintf("%s: %s", what, strings.TrimSpace(string(msg)))}
	}
	return resp, nil
}

// StatusError is a daemon's refusal: its HTTP status and message.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return e.Msg }

func (c *Client) getJSON(ctx context.Context, what, method, u string, body io.Reader, out any) error {
	ct := ""
	if body != nil {
		ct = "application/json"
	}
	resp, err := c.do(ctx, what, method, u, body, ct, http.StatusOK)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s: decode reply: %w", what, err)
	}
	return nil
}

// LoadImages streams an image tarball to the daemon, which loads it.
func (c *Client) LoadImages(ctx context.Context, tarball io.Reader) ([]LoadedImage, error) {
	resp, err := c.do(ctx, "load images", http.MethodPost, "http://crib/v1/images/load", tarball, "application/x-tar", http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []LoadedImage
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("load images: decode reply: %w", err)
	}
	return out, nil
}

// ListImages returns every image of the daemon's store.
func (c *Client) ListImages(ctx context.Context) ([]ImageInfo, error) {
	var out []ImageInfo
	err := c.getJSON(ctx, "list images", http.MethodGet, "http://crib/v1/images", nil, &out)
	return out, err
}

// InspectImage returns everything the store knows of the image ref names.
func (c *Client) InspectImage(ctx context.Context, ref string) (ImageInfo, error) {
	var out ImageInfo
	err := c.getJSON(ctx, "inspect image "+ref, http.MethodGet, imagePath(ref, ""), nil, &out)
	return out, err
}

// RemoveImage removes the image (or the name) ref; an absent image is not
// an error.
func (c *Client) RemoveImage(ctx context.Context, ref string) error {
	resp, err := c.do(ctx, "remove image "+ref, http.MethodDelete, imagePath(ref, ""), nil, "", http.StatusNoContent)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// PruneImages removes every image no container uses and that is not
// pinned.
func (c *Client) PruneImages(ctx context.Context) (PruneResult, error) {
	var out PruneResult
	err := c.getJSON(ctx, "prune images", http.MethodPost, "http://crib/v1/images/prune", nil, &out)
	return out, err
}

// SaveImage writes the image ref names to w as a tarball in format
// ("oci" or "docker").
func (c *Client) SaveImage(ctx context.Context, ref, format string, w io.Writer) error {
	u := imagePath(ref, "/save") + "?format=" + url.QueryEscape(format)
	resp, err := c.do(ctx, "save image "+ref, http.MethodGet, u, nil, "", http.StatusOK)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("save image %s: %w", ref, err)
	}
	return nil
}

// ListPulls returns the pulls in flight in the daemon, oldest first.
func (c *Client) ListPulls(ctx context.Context) ([]PullInfo, error) {
	var out []PullInfo
	err := c.getJSON(ctx, "list pulls", http.MethodGet, "http://crib/v1/pulls", nil, &out)
	return out, err
}

// PullImage has the daemon pull ref with auth (nil: anonymous), calling
// progress (when not nil) for every progress line, and returns the image
// id.
func (c *Client) PullImage(ctx context.Context, ref string, auth *image.Auth, progress func(PullEvent)) (string, error) {
	body, err := json.Marshal(PullRequest{Ref: ref, Auth: auth})
	if err != nil {
		return "", fmt.Errorf("pull image %s: %w", ref, err)
	}
	resp, err := c.do(ctx, "pull image "+ref, http.MethodPost, "http://crib/v1/images/pull", bytes.NewReader(body), "application/json", http.StatusOK)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev PullEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return "", fmt.Errorf("pull image %s: decode progress: %w", ref, err)
		}
		switch {
		case ev.Error != "":
			return "", errors.New(ev.Error)
		case ev.ID != "":
			return ev.ID, nil
		case progress != nil:
			progress(ev)
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("pull image %s: %w", ref, err)
	}
	return "", fmt.Errorf("pull image %s: the daemon ended the reply without a result", ref)
}
