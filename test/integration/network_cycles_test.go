package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hostNetworkState is what pod networking leaves on the host for this
// daemon's network: its IPAM reservations, the interfaces on its bridge,
// and the iptables rules that name its network or its pods' addresses.
// Other tests' daemons run beside it, so nothing host-wide is compared.
func (e *env) hostNetworkState() map[string][]string {
	e.t.Helper()
	state := map[string][]string{}
	entries, _ := os.ReadDir(filepath.Join(e.d.Root, "cni", "networks", e.d.Bridge))
	for _, en := range entries {
		state["ipam"] = append(state["ipam"], en.Name())
	}
	ports, _ := os.ReadDir(filepath.Join("/sys/class/net", e.d.Bridge, "brif"))
	for _, p := range ports {
		state["bridge ports"] = append(state["bridge ports"], p.Name())
	}
	prefix := e.d.Subnet[:strings.LastIndex(e.d.Subnet, ".")+1] // "10.a.b."
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.Command("iptables", "-w", "-t", table, "-S").Output()
		if err != nil {
			continue
		}
		for _, r := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.Contains(r, `"`+e.d.Bridge+`"`) || strings.Contains(r, prefix) {
				state[table] = append(state[table], r)
			}
		}
	}
	for _, v := range state {
		sort.Strings(v)
	}
	return state
}

// TestNetworkCycles: 200 pods attached and removed leave the host's IPAM
// store, veths and iptables as they were.
func TestNetworkCycles(t *testing.T) {
	if testing.Short() {
		t.Skip("200 pod cycles")
	}
	e := newEnv(t)
	// One pod first, so that the bridge and the network's own rules exist
	// in the state before.
	warm := e.podConfig("warm")
	warmID := e.runPod(warm)
	if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: warmID}); err != nil {
		t.Fatal(err)
	}
	before := e.hostNetworkState()
	for i := 0; i < 200; i++ {
		cfg := e.podConfig("cycle")
		cfg.Metadata.Attempt = uint32(i)
		cfg.PortMappings = []*runtimeapi.PortMapping{{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 39080}}
		id := e.runPod(cfg)
		if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
	}
	// veths go with their namespace, a moment after.
	var after map[string][]string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		after = e.hostNetworkState()
		if cmp.Equal(before, after) || time.Now().After(deadline) {
			break
		}
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("host network state after 200 pods (-before +after):\n%s", diff)
	}
}

// TestNoNetworkConfig: without a CNI configuration the network is not
// ready, pods that need it are refused with the reason, and host-network
// pods still run.
func TestNoNetworkConfig(t *testing.T) {
	e := newEnv(t)
	confs, _ := filepath.Glob(filepath.Join(e.d.Dir, "cni", "*"))
	for _, c := range confs {
		if err := os.Remove(c); err != nil {
			t.Fatal(err)
		}
	}
	var st *runtimeapi.StatusResponse
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if st, err = e.rt().Status(e.ctx(), &runtimeapi.StatusRequest{}); err != nil {
			t.Fatal(err)
		}
		if !networkReady(st) || time.Now().After(deadline) {
			break
		}
	}
	if networkReady(st) {
		t.Fatal("NetworkReady with an empty CNI conf dir")
	}
	_, err := e.rt().RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: e.podConfig("nonet")})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "network") {
		t.Errorf("RunPodSandbox without a network = %v, want FailedPrecondition naming the network", err)
	}
	host := e.podConfig("hostnet")
	host.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	id := e.runPod(host)
	c := e.run(id, host, e.ctrConfig("c", "sleep", "3600"))
	e.waitState(c, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
}

func networkReady(st *runtimeapi.StatusResponse) bool {
	for _, c := range st.GetStatus().GetConditions() {
		if c.GetType() == runtimeapi.NetworkReady {
			return c.GetStatus()
		}
	}
	return false
}
