package kernelstats

import (
	"os"
	"path/filepath"
	"testing"
)

// writeTree writes files (path relative to root -> content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// v1Files are the files of a v1 cgroup at group: cpuacct, memory (with
// swap accounting when memsw) and pids.
func v1Files(group string, memsw bool) map[string]string {
	cpu := filepath.Join("cpuacct", group)
	mem := filepath.Join("memory", group)
	pids := filepath.Join("pids", group)
	files := map[string]string{
		cpu + "/cpuacct.usage":        "123456789\n",
		cpu + "/cpuacct.usage_percpu": "100000000 23456789\n",
		cpu + "/cpuacct.stat":         "user 10\nsystem 2\n",
		mem + "/memory.stat": "cache 4096\nrss 8192\ninactive_file 100\n" +
			"total_cache 40960\ntotal_rss 81920\ntotal_inactive_file 10000\n" +
			"total_mapped_file 512\ntotal_pgfault 77\ntotal_pgmajfault 3\n",
		mem + "/memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		mem + "/memory.usage_in_bytes":     "150000\n",
		mem + "/memory.max_usage_in_bytes": "200000\n",
		mem + "/memory.failcnt":            "6\n",
		mem + "/memory.limit_in_bytes":     "1048576\n",
		pids + "/pids.current":             "4\n",
		pids + "/pids.max":                 "max\n",
		pids + "/cgroup.procs":             "7\n8\n",
		pids + "/child/cgroup.procs":       "9\n",
	}
	if memsw {
		files["memory/memory.memsw.usage_in_bytes"] = "0\n"
		files[mem+"/memory.memsw.usage_in_bytes"] = "160000\n"
		files[mem+"/memory.memsw.max_usage_in_bytes"] = "0\n"
		files[mem+"/memory.memsw.failcnt"] = "0\n"
		files[mem+"/memory.memsw.limit_in_bytes"] = "3145728\n"
	}
	return files
}
