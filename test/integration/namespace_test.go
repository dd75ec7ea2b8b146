package integration

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPodSharesUTSAndNetwork(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("share")
	podID := e.runPod(pod)
	server := e.run(podID, pod, e.ctrConfig("server", "sh", "-c",
		"mkdir -p /www && echo pong > /www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /www"))
	client := e.run(podID, pod, e.ctrConfig("client", "sleep", "3600"))
	e.waitState(server, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	e.waitState(client, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	t.Run("hostname", func(t *testing.T) {
		for _, id := range []string{server, client} {
			out := e.exec(id, "hostname")
			if got := strings.TrimSpace(string(out.Stdout)); got != pod.Hostname || out.ExitCode != 0 {
				t.Errorf("hostname in %s = %q (exit %d, stderr %q), want %q", id[:12], got, out.ExitCode, out.Stderr, pod.Hostname)
			}
		}
	})

	t.Run("loopback", func(t *testing.T) {
		var last *runtimeapi.ExecSyncResponse
		eventually(t, 10*time.Second, "the client to fetch from the server over 127.0.0.1", func() bool {
			last = e.exec(client, "wget", "-q", "-O", "-", "http://127.0.0.1:8080/index.html")
			return last.ExitCode == 0
		})
		if got := strings.TrimSpace(string(last.Stdout)); got != "pong" {
			t.Errorf("wget from the other container = %q, want pong", got)
		}
	})

	t.Run("separate pid namespaces", func(t *testing.T) {
		for id, want := range map[string]string{server: "httpd", client: "sleep"} {
			out := e.exec(id, "cat", "/proc/1/cmdline")
			argv := strings.Split(strings.TrimRight(string(out.Stdout), "\x00"), "\x00")
			if argv[0] != want {
				t.Errorf("PID 1 in %s is %q, want %s", id[:12], argv, want)
			}
		}
		ps := e.exec(client, "ps", "-o", "pid,args")
		if strings.Contains(string(ps.Stdout), "httpd") {
			t.Errorf("client sees the server's processes:\n%s", ps.Stdout)
		}
	})
}

func TestSharedPIDNamespace(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("pidpod")
	pod.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	podID := e.runPod(pod)
	var ids []string
	for _, name := range []string{"one", "two"} {
		cfg := e.ctrConfig(name, "sleep", map[string]string{"one": "3601", "two": "3602"}[name])
		cfg.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
		id := e.run(podID, pod, cfg)
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		ids = append(ids, id)
	}
	check := func(t *testing.T) {
		for i, id := range ids {
			ps := string(e.exec(id, "ps", "-o", "pid,args").Stdout)
			for _, want := range []string{"sleep 3601", "sleep 3602"} {
				if !strings.Contains(ps, want) {
					t.Errorf("container %d does not see %q in the shared PID namespace:\n%s", i+1, want, ps)
				}
			}
			argv := strings.Split(strings.TrimRight(string(e.exec(id, "cat", "/proc/1/cmdline").Stdout), "\x00"), "\x00")
			if len(argv) != 3 || argv[1] != "pause" || argv[2] != podID {
				t.Errorf("PID 1 of the pod is %q, want crib's pause", argv)
			}
		}
	}
	check(t)
	t.Run("after daemon restart", func(t *testing.T) {
		e.d.Kill9(t)
		e.d.Restart(t)
		ps, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID})
		if err != nil || ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			t.Fatalf("pod after restart: %v, %v; want READY", ps.GetStatus().GetState(), err)
		}
		check(t)
	})
}

func TestHostNetworkPod(t *testing.T) {
	e := newEnv(t)
	iface := defaultInterface(t)
	host := e.podConfig("hostnet")
	host.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	hostID := e.runPod(host)
	inHost := e.run(hostID, host, e.ctrConfig("c", "sleep", "3600"))
	own := e.podConfig("ownnet")
	ownID := e.runPod(own)
	inOwn := e.run(ownID, own, e.ctrConfig("c", "sleep", "3600"))
	e.waitState(inHost, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	e.waitState(inOwn, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	if iface == "" {
		t.Log("the host has no routed interface of its own: only the pods' bridge is looked for")
	} else if dev := string(e.exec(inHost, "cat", "/proc/net/dev").Stdout); !strings.Contains(dev, iface+":") {
		t.Errorf("host-network pod does not see the host's %s:\n%s", iface, dev)
	}
	// The pods' bridge exists on the host once a pod is networked; only
	// a pod in the host's network namespace sees it.
	if dev := string(e.exec(inHost, "cat", "/proc/net/dev").Stdout); !strings.Contains(dev, e.d.Bridge+":") {
		t.Errorf("host-network pod does not see the pods' bridge %s:\n%s", e.d.Bridge, dev)
	}
	if dev := string(e.exec(inOwn, "cat", "/proc/net/dev").Stdout); strings.Contains(dev, e.d.Bridge+":") {
		t.Errorf("pod with its own network sees the host's bridge %s:\n%s", e.d.Bridge, dev)
	}
	hostname, _ := os.Hostname()
	if got := strings.TrimSpace(string(e.exec(inHost, "hostname").Stdout)); got != hostname {
		t.Errorf("hostname in the host-network pod = %q, want the host's %q", got, hostname)
	}
}

// defaultInterface is the interface of the host's default route, or the
// first other routed one; "" when the host has none (a VM without a NIC).
// Pods' bridges and veths do not count: other tests make and remove them.
func defaultInterface(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/net/route")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var first string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] == "Iface" || fields[0] == "lo" ||
			strings.HasPrefix(fields[0], "cribt") || strings.HasPrefix(fields[0], "veth") {
			continue
		}
		if fields[1] == "00000000" {
			return fields[0]
		}
		if first == "" {
			first = fields[0]
		}
	}
	return first
}
