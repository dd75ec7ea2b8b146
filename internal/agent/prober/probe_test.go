package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeServer is an HTTP server for probes; it records the last request.
func probeServer(t *testing.T, tls bool) (*httptest.Server, chan *http.Request) {
	t.Helper()
	reqs := make(chan *http.Request, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		reqs <- r
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/bad", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusFound)
	})
	mux.HandleFunc("/movedbad", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/bad", http.StatusFound)
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/bad", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 3*maxBody))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	srv := httptest.NewUnstartedServer(mux)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, reqs
}

func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

func httpProbe(path string, port intstr.IntOrString, scheme corev1.URIScheme, headers ...corev1.HTTPHeader) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: path, Port: port, Scheme: scheme, HTTPHeaders: headers,
	}}, TimeoutSeconds: 1}
}

func TestHTTPProbe(t *testing.T) {
	srv, reqs := probeServer(t, false)
	tlsSrv, _ := probeServer(t, true)
	ip, port := hostPort(t, srv.Listener.Addr().String())
	_, tlsPort := hostPort(t, tlsSrv.Listener.Addr().String())
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	h := &handlers{userAgent: "crib-probe/test"}

	for _, tc := range []struct {
		name    string
		probe   *corev1.Probe
		podIP   string
		want    Result
		msgHas  string
		maxBody int
	}{
		{name: "200", probe: httpProbe("/ok", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Success, msgHas: "fine"},
		{name: "path without slash", probe: httpProbe("ok", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Success},
		{name: "named port", probe: httpProbe("/ok", intstr.FromString("http"), corev1.URISchemeHTTP), podIP: ip, want: Success},
		{name: "port number as string", probe: httpProbe("/ok", intstr.FromString(strconv.Itoa(port)), ""), podIP: ip, want: Success},
		{name: "unknown port name", probe: httpProbe("/ok", intstr.FromString("metrics"), ""), podIP: ip, want: Failure, msgHas: `"metrics"`},
		{name: "no pod IP means loopback", probe: httpProbe("/ok", intstr.FromInt32(int32(port)), ""), podIP: "", want: Success},
		{name: "500", probe: httpProbe("/bad", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Failure, msgHas: "500"},
		{name: "404", probe: httpProbe("/none", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Failure, msgHas: "404"},
		{name: "same-host redirect followed", probe: httpProbe("/moved", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Success, msgHas: "fine"},
		{name: "same-host redirect to a failure", probe: httpProbe("/movedbad", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Failure, msgHas: "500"},
		{name: "other-host redirect not followed", probe: httpProbe("/away", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Success, msgHas: "302"},
		{name: "body read is bounded", probe: httpProbe("/big", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Success, maxBody: maxBody},
		{name: "timeout", probe: httpProbe("/slow", intstr.FromInt32(int32(port)), ""), podIP: ip, want: Failure},
		{name: "https without verification", probe: httpProbe("/ok", intstr.FromInt32(int32(tlsPort)), corev1.URISchemeHTTPS), podIP: ip, want: Success},
		{name: "bad scheme", probe: httpProbe("/ok", intstr.FromInt32(int32(port)), "gopher"), podIP: ip, want: Failure, msgHas: "scheme"},
		{name: "port out of range", probe: httpProbe("/ok", intstr.FromInt32(70000), ""), podIP: ip, want: Failure, msgHas: "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := h.run(context.Background(), tc.probe, target{container: c, containerID: "c1", podIP: tc.podIP})
			if got != tc.want {
				t.Fatalf("result %v (%s), want %v", got, msg, tc.want)
			}
			if !strings.Contains(msg, tc.msgHas) {
				t.Errorf("message %q does not contain %q", msg, tc.msgHas)
			}
			if tc.maxBody > 0 && len(msg) > tc.maxBody {
				t.Errorf("message of %d bytes, want at most %d", len(msg), tc.maxBody)
			}
		})
	}
	for len(reqs) > 0 {
		<-reqs
	}

	t.Run("headers", func(t *testing.T) {
		p := httpProbe("/ok", intstr.FromInt32(int32(port)), "",
			corev1.HTTPHeader{Name: "X-Probe", Value: "one"},
			corev1.HTTPHeader{Name: "X-Probe", Value: "two"},
			corev1.HTTPHeader{Name: "Host", Value: "app.example"},
			corev1.HTTPHeader{Name: "Accept", Value: "application/json"})
		if got, msg := h.run(context.Background(), p, target{container: c, podIP: ip}); got != Success {
			t.Fatalf("result %v (%s)", got, msg)
		}
		r := <-reqs
		for _, hc := range []struct{ got, want string }{
			{strings.Join(r.Header.Values("X-Probe"), ","), "one,two"},
			{r.Host, "app.example"},
			{r.Header.Get("Accept"), "application/json"},
			{r.UserAgent(), "crib-probe/test"},
		} {
			if hc.got != hc.want {
				t.Errorf("got %q, want %q", hc.got, hc.want)
			}
		}
	})
}

// redirectDial sends every connection to addr, whatever the pod IP says.
func redirectDial(addr string, dialed *[]string) DialFunc {
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		*dialed = append(*dialed, a)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

func TestProbesUseInjectedDial(t *testing.T) {
	srv, _ := probeServer(t, false)
	var dialed []string
	h := &handlers{dial: redirectDial(srv.Listener.Addr().String(), &dialed)}
	tg := target{container: &corev1.Container{}, podIP: "10.88.0.7"}
	probes := []*corev1.Probe{
		httpProbe("/ok", intstr.FromInt32(8080), ""),
		{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
	}
	for _, p := range probes {
		if got, msg := h.run(context.Background(), p, tg); got != Success {
			t.Fatalf("result %v (%s)", got, msg)
		}
	}
	want := []string{"10.88.0.7:8080", "10.88.0.7:8080"}
	if strings.Join(dialed, " ") != strings.Join(want, " ") {
		t.Errorf("dialed %v, want %v", dialed, want)
	}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, open := hostPort(t, ln.Addr().String())
	closedLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closed := hostPort(t, closedLn.Addr().String())
	closedLn.Close()

	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "db", ContainerPort: int32(open)}}}
	h := &handlers{}
	for _, tc := range []struct {
		name string
		port intstr.IntOrString
		host string
		want Result
	}{
		{"open", intstr.FromInt32(int32(open)), "", Success},
		{"named", intstr.FromString("db"), "", Success},
		{"explicit host", intstr.FromInt32(int32(open)), "127.0.0.1", Success},
		{"closed", intstr.FromInt32(int32(closed)), "", Failure},
		{"unknown name", intstr.FromString("web"), "", Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: tc.port, Host: tc.host}}, TimeoutSeconds: 1}
			if got, msg := h.run(context.Background(), p, target{container: c, podIP: "127.0.0.1"}); got != tc.want {
				t.Errorf("result %v (%s), want %v", got, msg, tc.want)
			}
		})
	}
}

func grpcServer(t *testing.T, withHealth bool) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if withHealth {
		hs := health.NewServer()
		hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
		hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
		healthpb.RegisterHealthServer(s, hs)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	_, port := hostPort(t, ln.Addr().String())
	return port
}

func TestGRPCProbe(t *testing.T) {
	healthy := grpcServer(t, true)
	bare := grpcServer(t, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closed := hostPort(t, ln.Addr().String())
	ln.Close()

	svc := func(s string) *string { return &s }
	h := &handlers{userAgent: DefaultUserAgent}
	for _, tc := range []struct {
		name    string
		port    int
		service *string
		want    Result
		msgHas  string
	}{
		{"server health", healthy, nil, Success, ""},
		{"serving service", healthy, svc("up"), Success, ""},
		{"not serving", healthy, svc("down"), Failure, "NOT_SERVING"},
		{"unknown service", healthy, svc("nope"), Failure, "NotFound"},
		{"no health service", bare, nil, Failure, "grpc.health.v1"},
		{"nothing listening", closed, nil, Failure, ""},
		{"bad port", 0, nil, Failure, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(tc.port), Service: tc.service}}, TimeoutSeconds: 2}
			got, msg := h.run(context.Background(), p, target{podIP: "127.0.0.1"})
			if got != tc.want {
				t.Fatalf("result %v (%s), want %v", got, msg, tc.want)
			}
			if !strings.Contains(msg, tc.msgHas) {
				t.Errorf("message %q does not contain %q", msg, tc.msgHas)
			}
		})
	}
}

func TestExecProbe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		want   Result
		msgHas string
	}{
		{"exit 0", nil, Success, "out"},
		{"exit 2", exitError{2}, Failure, "exited with 2"},
		{"wrapped exit", fmt.Errorf("exec: %w", exitError{7}), Failure, "exited with 7"},
		{"timeout", context.DeadlineExceeded, Failure, "timed out after 3s"},
		{"cri-client timeout", errors.New(`command timed out: "sh" timed out after 3s`), Failure, "timed out after 3s"},
		{"runtime error", errors.New("container not running"), Failure, "container not running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := newFakeExec()
			fe.output = "out"
			fe.set("sh", tc.err)
			h := &handlers{exec: fe}
			p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "true"}}}, TimeoutSeconds: 3}
			got, msg := h.run(context.Background(), p, target{containerID: "c9"})
			if got != tc.want {
				t.Fatalf("result %v (%s), want %v", got, msg, tc.want)
			}
			if !strings.Contains(msg, tc.msgHas) {
				t.Errorf("message %q does not contain %q", msg, tc.msgHas)
			}
			want := execCall{containerID: "c9", cmd: "sh -c true", timeout: 3 * time.Second}
			if len(fe.calls) != 1 || fe.calls[0] != want {
				t.Errorf("calls %+v, want [%+v]", fe.calls, want)
			}
		})
	}
	t.Run("no runtime", func(t *testing.T) {
		p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		if got, _ := (&handlers{}).run(context.Background(), p, target{}); got != Failure {
			t.Errorf("result %v, want failure", got)
		}
	})
	t.Run("no command", func(t *testing.T) {
		p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}
		if got, _ := (&handlers{exec: newFakeExec()}).run(context.Background(), p, target{}); got != Failure {
			t.Errorf("result %v, want failure", got)
		}
	})
	t.Run("no handler", func(t *testing.T) {
		if got, _ := (&handlers{}).run(context.Background(), &corev1.Probe{}, target{}); got != Failure {
			t.Errorf("result %v, want failure", got)
		}
	})
}
