package integration

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodNetwork: pods on crib's default bridge get IPs of the daemon's
// subnet, reach each other by IP, are reached from the host, publish a
// host port, and give their IPs back when stopped, once however often the
// stop is repeated.
func TestPodNetwork(t *testing.T) {
	e := newEnv(t)
	_, subnet, err := net.ParseCIDR(e.d.Subnet)
	if err != nil {
		t.Fatal(err)
	}
	server := e.podConfig("server")
	server.PortMappings = []*runtimeapi.PortMapping{{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 8080, HostPort: 38080}}
	serverID := e.runPod(server)
	e.run(serverID, server, e.ctrConfig("httpd", "sh", "-c",
		"mkdir -p /www && echo hello-from-pod > /www/index.html && httpd -f -p 8080 -h /www"))
	client := e.podConfig("client")
	clientID := e.runPod(client)
	inClient := e.run(clientID, client, e.ctrConfig("c", "sleep", "3600"))
	e.waitState(inClient, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	serverIP := e.podIP(serverID)
	clientIP := e.podIP(clientID)
	for _, ip := range []net.IP{serverIP, clientIP} {
		if !subnet.Contains(ip) {
			t.Fatalf("pod IP %v is not in the daemon's subnet %s", ip, subnet)
		}
	}
	if serverIP.Equal(clientIP) {
		t.Fatalf("two pods got the same IP %v", serverIP)
	}

	// busybox nc, not wget: Debian's static wget crashes on -T.
	get := fmt.Sprintf(`printf 'GET /index.html HTTP/1.0\r\n\r\n' | nc -w 2 %s 8080`, serverIP)
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res := e.exec(inClient, "sh", "-c", get)
		if out = string(res.Stdout); strings.Contains(out, "hello-from-pod") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.HasSuffix(strings.TrimSpace(out), "hello-from-pod") {
		t.Errorf("pod to pod %s:8080: %q", serverIP, out)
	}
	if got := httpGet(t, net.JoinHostPort(serverIP.String(), "8080")); got != "hello-from-pod" {
		t.Errorf("host to pod: %q", got)
	}
	// The host port answers on the host's own addresses (the bridge's
	// gateway is one of them).
	gw := gateway(subnet)
	if got := httpGet(t, net.JoinHostPort(gw.String(), "38080")); got != "hello-from-pod" {
		t.Errorf("host port %s:38080: %q", gw, got)
	}

	for _, id := range []string{serverID, clientID} {
		for i := 0; i < 3; i++ {
			if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
				t.Fatalf("StopPodSandbox #%d: %v", i+1, err)
			}
		}
	}
	for _, leak := range e.d.Leaks() {
		if strings.HasPrefix(leak, "interface ") || strings.HasPrefix(leak, "IP ") {
			t.Errorf("after stopping the pods: %s", leak)
		}
	}
}

func (e *env) podIP(id string) net.IP {
	e.t.Helper()
	st, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		e.t.Fatal(err)
	}
	ip := net.ParseIP(st.GetStatus().GetNetwork().GetIp())
	if ip == nil {
		e.t.Fatalf("pod %s has no IP: %v", id, st.GetStatus().GetNetwork())
	}
	return ip
}

// gateway is the first address of subnet, the bridge's.
func gateway(subnet *net.IPNet) net.IP {
	ip := subnet.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1)
}

func httpGet(t *testing.T, addr string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(conn, "GET /index.html HTTP/1.0\r\n\r\n")
			body, _ := io.ReadAll(conn)
			conn.Close()
			if _, after, ok := strings.Cut(string(body), "\r\n\r\n"); ok {
				return strings.TrimSpace(after)
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("GET %s: %v", addr, err)
			return ""
		}
		time.Sleep(100 * time.Millisecond)
	}
}
