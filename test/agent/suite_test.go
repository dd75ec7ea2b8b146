package agenttest

import (
	"os"
	"testing"
	"time"
)

// scenario is one independent pod story; scenarios run in parallel on one
// agent and one runtime, each with pods of its own names.
type scenario struct {
	name string
	run  func(t *testing.T, s *suite)
}

// suite is what every scenario gets: the runtime and the shared agent.
type suite struct {
	env *runtimeEnv
	h   *harness
}

var parallelScenarios = []scenario{
	{"InitContainersInOrder", testInitContainers},
	{"InitContainerFailsNever", testInitFailure},
	{"InitContainerCrashLoop", testInitCrashLoop},
	{"CrashLoopAlways", testCrashLoopAlways},
	{"OnFailureExitZero", testOnFailureSucceeded},
	{"NeverExitOne", testNeverFailed},
	{"LivenessRestarts", testLiveness},
	{"ReadinessFlips", testReadiness},
	{"LifecycleHooks", testHooks},
	{"EditReplacesContainer", testEditContainer},
	{"PodLevelEditNewSandbox", testEditSandbox},
	{"DeletedManifestTearsDown", testTeardown},
	{"InvalidManifestIsolated", testInvalidManifest},
	{"ConfigMapSecretVolumesEnv", testConfigMapSecret},
	{"RejectedEditKeepsData", testRejectedEditKeepsData},
	{"ImagePullNever", testPullNever},
	{"ImagePullBackOff", testPullBackOff},
	{"SignaturePolicy", testSignaturePolicy},
	{"ImageVolume", testImageVolume},
	{"SubPathSymlinkRefused", testSubPath},
	{"NativeSidecar", testSidecar},
	{"ResizeInPlace", testResizeInPlace},
	{"HostUsersFalseRefused", testHostUsersRefused},
	{"ProcMountUnmasked", testProcMount},
	{"NRIPluginAdjustsAndRefuses", testNRI},
}

// TestScenarios runs the scenarios in parallel on one agent, then the
// agent restart, then removes every manifest and checks that the runtime
// (crib only) kept nothing.
func TestScenarios(t *testing.T) {
	env := newRuntimeEnv(t)
	s := &suite{env: env, h: startAgent(t, env)}
	t.Run("parallel", func(t *testing.T) {
		for _, sc := range parallelScenarios {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				sc.run(t, s)
			})
		}
	})
	// The restart replaces the agent every other scenario watches, so it
	// runs alone.
	t.Run("AgentRestartAdoptsPods", func(t *testing.T) { testAdopt(t, s) })
	t.Run("NoLeaks", func(t *testing.T) { testNoLeaks(t, s) })
}

// testNoLeaks removes every manifest and checks that the agent removed
// everything it made, and that the crib daemon holds nothing.
func testNoLeaks(t *testing.T, s *suite) {
	if left := s.h.drain(); len(left) > 0 {
		t.Fatalf("after all manifests were removed the runtime still holds %v", left)
	}
	deadline := time.Now().Add(shortWait)
	for _, dir := range []string{s.h.LogRoot, s.h.Root + "/pods"} {
		for {
			entries, err := os.ReadDir(dir)
			if (err == nil && len(entries) == 0) || os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s still holds %v (err %v)", dir, names(entries), err)
				break
			}
			time.Sleep(pollEvery)
		}
	}
	for left := s.h.podCgroups(); len(left) > 0; left = s.h.podCgroups() {
		if time.Now().After(deadline) {
			t.Errorf("pod cgroups left: %v", left)
			break
		}
		time.Sleep(pollEvery)
	}
	if s.env.daemon == nil {
		return
	}
	var leaks []string
	for {
		if leaks = s.env.daemon.Leaks(); len(leaks) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(pollEvery)
	}
	for _, l := range leaks {
		t.Errorf("leak: %s", l)
	}
}

func names(entries []os.DirEntry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
