package integration

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPodAndContainerLifecycle(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("life")
	podID := e.runPod(pod)

	mainID := e.run(podID, pod, e.ctrConfig("main", "sh", "-c", "echo hello; sleep 3600"))
	st := e.waitState(mainID, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	if st.StartedAt == 0 || st.StartedAt < st.CreatedAt {
		t.Errorf("started_at = %d, created_at = %d", st.StartedAt, st.CreatedAt)
	}
	if want := pod.LogDirectory + "/main.log"; st.LogPath != want {
		t.Errorf("log_path = %q, want %q", st.LogPath, want)
	}
	waitLog(t, st.LogPath, "hello", 10*time.Second)

	t.Run("image id", func(t *testing.T) {
		img, err := e.d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: e.img.Ref}})
		if err != nil || img.Image == nil {
			t.Fatalf("ImageStatus %s = %v, %v", e.img.Ref, img, err)
		}
		if st.ImageId != img.Image.Id {
			t.Errorf("container image_id = %q, ImageStatus id = %q", st.ImageId, img.Image.Id)
		}
		list, err := e.d.Images.ListImages(e.ctx(), &runtimeapi.ListImagesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, i := range list.Images {
			if i.Id == st.ImageId {
				found = true
				if !slices.Contains(i.RepoTags, e.img.Ref) {
					t.Errorf("ListImages tags of %s = %v, want %s among them", i.Id, i.RepoTags, e.img.Ref)
				}
			}
		}
		if !found {
			t.Errorf("ListImages has no image %s", st.ImageId)
		}
	})

	okID := e.run(podID, pod, e.ctrConfig("ok", "sh", "-c", "exit 0"))
	badID := e.run(podID, pod, e.ctrConfig("bad", "sh", "-c", "exit 3"))
	t.Run("exit codes", func(t *testing.T) {
		for _, tt := range []struct {
			id, reason string
			code       int32
		}{{okID, "Completed", 0}, {badID, "Error", 3}} {
			st := e.waitState(tt.id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
			if st.ExitCode != tt.code || st.Reason != tt.reason {
				t.Errorf("%s: exit code %d reason %q, want %d %q", st.Metadata.Name, st.ExitCode, st.Reason, tt.code, tt.reason)
			}
			if st.FinishedAt == 0 || st.FinishedAt < st.StartedAt {
				t.Errorf("%s: finished_at %d, started_at %d", st.Metadata.Name, st.FinishedAt, st.StartedAt)
			}
		}
	})

	// A second pod with a created, never started container, so that the
	// filters have something to leave out.
	other := e.podConfig("other")
	otherID := e.runPod(other)
	createdID := e.create(otherID, other, e.ctrConfig("idle", "sleep", "3600"))

	t.Run("list containers", func(t *testing.T) {
		state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
			return &runtimeapi.ContainerStateValue{State: s}
		}
		tests := map[string]struct {
			filter *runtimeapi.ContainerFilter
			want   []string
		}{
			"none":         {nil, []string{mainID, okID, badID, createdID}},
			"id":           {&runtimeapi.ContainerFilter{Id: mainID}, []string{mainID}},
			"id prefix":    {&runtimeapi.ContainerFilter{Id: badID[:12]}, []string{badID}},
			"sandbox":      {&runtimeapi.ContainerFilter{PodSandboxId: podID}, []string{mainID, okID, badID}},
			"running":      {&runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, []string{mainID}},
			"exited":       {&runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_EXITED)}, []string{okID, badID}},
			"created":      {&runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_CREATED)}, []string{createdID}},
			"label":        {&runtimeapi.ContainerFilter{LabelSelector: map[string]string{"name": "bad"}}, []string{badID}},
			"label+sandbx": {&runtimeapi.ContainerFilter{PodSandboxId: otherID, LabelSelector: map[string]string{"name": "bad"}}, nil},
			"unknown id":   {&runtimeapi.ContainerFilter{Id: "feedface"}, nil},
		}
		for name, tt := range tests {
			t.Run(name, func(t *testing.T) {
				resp, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{Filter: tt.filter})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, c := range resp.Containers {
					got = append(got, c.Id)
				}
				if diff := cmp.Diff(sorted(tt.want), sorted(got)); diff != "" {
					t.Errorf("ListContainers(%v) ids (-want +got):\n%s", tt.filter, diff)
				}
			})
		}
	})

	t.Run("list pods", func(t *testing.T) {
		ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
		tests := map[string]struct {
			filter *runtimeapi.PodSandboxFilter
			want   []string
		}{
			"none":      {nil, []string{podID, otherID}},
			"id":        {&runtimeapi.PodSandboxFilter{Id: otherID}, []string{otherID}},
			"id prefix": {&runtimeapi.PodSandboxFilter{Id: podID[:10]}, []string{podID}},
			"ready":     {&runtimeapi.PodSandboxFilter{State: ready}, []string{podID, otherID}},
			"label":     {&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"pod": "life"}}, []string{podID}},
			"no match":  {&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"pod": "nope"}}, nil},
		}
		for name, tt := range tests {
			t.Run(name, func(t *testing.T) {
				resp, err := e.rt().ListPodSandbox(e.ctx(), &runtimeapi.ListPodSandboxRequest{Filter: tt.filter})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, p := range resp.Items {
					got = append(got, p.Id)
				}
				if diff := cmp.Diff(sorted(tt.want), sorted(got)); diff != "" {
					t.Errorf("ListPodSandbox(%v) ids (-want +got):\n%s", tt.filter, diff)
				}
			})
		}
	})

	t.Run("stop with timeout", func(t *testing.T) {
		if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: mainID, Timeout: 5}); err != nil {
			t.Fatal(err)
		}
		// SIGTERM ends it (143), or SIGKILL after the timeout (137).
		st := e.status(mainID)
		if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || (st.ExitCode != 143 && st.ExitCode != 137) || st.Reason != "Error" {
			t.Errorf("after stop: state %s exit code %d reason %q, want EXITED 143 or 137, Error", st.State, st.ExitCode, st.Reason)
		}
		if st.FinishedAt < st.StartedAt {
			t.Errorf("finished_at %d before started_at %d", st.FinishedAt, st.StartedAt)
		}
		// Stopping again is fine.
		if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: mainID, Timeout: 1}); err != nil {
			t.Errorf("second StopContainer: %v", err)
		}
	})

	t.Run("remove", func(t *testing.T) {
		for _, id := range []string{mainID, okID, badID} {
			if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
				t.Fatalf("RemoveContainer %s: %v", id, err)
			}
			_, err := e.rt().ContainerStatus(e.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
			if status.Code(err) != codes.NotFound {
				t.Errorf("ContainerStatus after remove: %v, want NotFound", err)
			}
		}
		resp, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: podID}})
		if err != nil || len(resp.Containers) != 0 {
			t.Errorf("containers of the pod after remove: %v, %v", resp.GetContainers(), err)
		}

		if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
			t.Fatal(err)
		}
		ps, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID})
		if err != nil || ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			t.Errorf("pod status after stop = %v, %v; want NOTREADY", ps.GetStatus().GetState(), err)
		}
		for i := 0; i < 2; i++ {
			if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
				t.Fatalf("RemovePodSandbox #%d: %v", i+1, err)
			}
		}
		_, err = e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID})
		if status.Code(err) != codes.NotFound {
			t.Errorf("PodSandboxStatus after remove: %v, want NotFound", err)
		}
		// Removing the other pod takes its created container with it.
		if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: otherID}); err != nil {
			t.Fatal(err)
		}
		if leaks := e.d.Leaks(); len(leaks) != 0 {
			t.Errorf("left after removing every pod: %v", leaks)
		}
	})
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}
