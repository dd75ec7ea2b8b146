package testutil

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// RemoveMasqueradeRules deletes the nat rules the CNI plugins added for
// the pod id, and the chains they jump to: the bridge plugin's DEL leaves
// them when it is given no network namespace (it learns the pod's
// addresses from the pod's link), which a test that destroys a pod's
// namespace first makes it do.
func RemoveMasqueradeRules(t testing.TB, id string) {
	out, err := exec.Command("iptables", "-t", "nat", "-S").Output()
	if err != nil {
		t.Logf("list nat rules: %v", err)
		return
	}
	mark := fmt.Sprintf(`id: \"%s\"`, id)
	var chains []string
	for _, rule := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(rule, "-A ") || !strings.Contains(rule, mark) {
			continue
		}
		f := strings.Fields(rule)
		if f[len(f)-2] == "-j" && strings.HasPrefix(f[len(f)-1], "CNI-") {
			chains = append(chains, f[len(f)-1])
		}
		// The rule as listed, but deleted; the shell undoes its quoting.
		if err := exec.Command("sh", "-c", "iptables -t nat -D "+strings.TrimPrefix(rule, "-A ")).Run(); err != nil {
			t.Logf("delete nat rule %q: %v", rule, err)
		}
	}
	for _, c := range chains {
		_ = exec.Command("iptables", "-t", "nat", "-F", c).Run()
		_ = exec.Command("iptables", "-t", "nat", "-X", c).Run()
	}
}
