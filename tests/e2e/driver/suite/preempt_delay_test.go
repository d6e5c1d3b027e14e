package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// createPriorityGang creates a one-pod PodGroup of the given priority class (deploy/'s classes:
// train 50, build 100) asking for `gpus` GPUs, with an optional spec.preemptionDelay.
func createPriorityGang(t *testing.T, ctx context.Context, ns, name, queue, class string, gpus int64, delay string) {
	t.Helper()
	spec := fmt.Sprintf("minMember: 1, queue: %s, priorityClassName: %s", queue, class)
	if delay != "" {
		spec += ", preemptionDelay: " + delay
	}
	pg := obj(t, fmt.Sprintf(`
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: %s, namespace: %s, labels: {kai.scheduler/queue: %s}}
spec: {%s}
`, name, ns, queue, spec))
	if _, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create podgroup %s: %v", name, err)
	}
	pod := pendingPod(name+"-0", gpus)
	pod.Labels["kai.scheduler/queue"] = queue
	pod.Annotations = map[string]string{"pod-group-name": name}
	if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
}

// Preempt (one queue, by priority) with a preemption delay: a build job (priority 100) in the
// queue of two running train jobs (50) that fill the node waits out its 20 s delay — no train pod
// is evicted, it gets no BindRequest, and its PodGroup is told why (KAI's
// PreemptionDelayNotElapsed fit error) — then preempts one train job and is placed.
// TestLiveSchedulerPreemptionDelay covers the same for reclaim (between queues).
func TestLiveSchedulerPreemptionDelayPreempt(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "sched-pdelay-" + id, GPUs: 4})
	ns := newNamespace(t, ctx, "sched-pdelay")
	cleanupPods(t, ns)
	queue := "pdelay-" + id
	createQueue(t, ctx, queue, 4)
	startScheduler(t)

	trainPods := []string{"train0-0", "train1-0"}
	createPriorityGang(t, ctx, ns, "train0", queue, "train", 2, "")
	createPriorityGang(t, ctx, ns, "train1", queue, "train", 2, "")
	playBinder(t, ctx, ns, waitBindRequests(t, ctx, ns, trainPods))
	waitRunning(t, ctx, ns, trainPods)

	const delay = 20 * time.Second
	createPriorityGang(t, ctx, ns, "build", queue, "build", 2, "20s")
	pg, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, "build", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := pg.GetCreationTimestamp().Time

	// Inside the delay: both train pods keep running, build gets no BindRequest.
	for time.Since(start) < delay-5*time.Second {
		time.Sleep(time.Second)
		for _, p := range trainPods {
			if _, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, p, metav1.GetOptions{}); err != nil {
				t.Fatalf("pod %s is gone %s after build was created, inside its %s delay: %v",
					p, time.Since(start).Round(time.Second), delay, err)
			}
		}
		brs, err := bindRequests(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, br := range brs {
			if name, _, _ := unstructured.NestedString(br.Object, "spec", "podName"); name == "build-0" {
				t.Fatalf("build-0 got a BindRequest inside its preemption delay")
			}
		}
	}
	evs, err := admin.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	told := false
	for _, e := range evs.Items {
		told = told || (e.InvolvedObject.Kind == "PodGroup" && e.InvolvedObject.Name == "build" &&
			strings.Contains(e.Message, "preemption delay"))
	}
	if !told {
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.InvolvedObject.Kind+" "+e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
		}
		t.Errorf("no event on PodGroup build mentions its preemption delay; events:\n%s", strings.Join(seen, "\n"))
	}

	// After it: one train pod is evicted and build is placed.
	waitBindRequests(t, ctx, ns, []string{"build-0"})
	if since := time.Since(start); since < delay {
		t.Errorf("build was placed %s after its creation, before its %s delay ended", since, delay)
	}
	remaining, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alive := 0
	for _, p := range remaining.Items {
		if strings.HasPrefix(p.Name, "train") {
			alive++
		}
	}
	if alive != 1 {
		t.Errorf("%d of the train pods remain after build preempted; want 1", alive)
	}
}
