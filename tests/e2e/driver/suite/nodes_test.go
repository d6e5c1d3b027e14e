package suite

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gantry/tests/e2e/driver/harness"
)

// Fake GPU nodes appear with their capacity (as the scheduler user sees them), and the fake
// kubelet runs a pod the binder bound to one, then finishes its graceful delete.
func TestFakeNodesAndKubelet(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	big, small, plain := "e2e-gpu-a-"+id, "e2e-gpu-b-"+id, "e2e-plain-"+id
	for _, n := range []harness.GPUNode{
		{Name: big, GPUs: 8, CPU: "96", Memory: "1Ti"},
		{Name: small, GPUs: 4, CPU: "32", Memory: "256Gi", Pods: 50},
	} {
		if _, err := harness.CreateGPUNode(ctx, admin, n); err != nil {
			t.Fatalf("create node %s: %v", n.Name, err)
		}
	}
	// A node no fake kubelet serves (no label): its pods must stay Pending.
	if _, err := admin.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: plain}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{big, small, plain} {
			admin.Kube.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})

	want := map[string]map[corev1.ResourceName]string{
		big:   {"nvidia.com/gpu": "8", corev1.ResourceCPU: "96", corev1.ResourceMemory: "1Ti", corev1.ResourcePods: "110"},
		small: {"nvidia.com/gpu": "4", corev1.ResourceCPU: "32", corev1.ResourceMemory: "256Gi", corev1.ResourcePods: "50"},
	}
	nodes, err := sched.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: harness.FakeNodeLabel + "=true"})
	if err != nil {
		t.Fatalf("scheduler lists nodes: %v", err)
	}
	seen := 0
	for _, n := range nodes.Items {
		w, ok := want[n.Name]
		if !ok {
			continue
		}
		seen++
		for res, q := range w {
			if got := n.Status.Capacity[res]; got.String() != q {
				t.Errorf("%s capacity %s = %s, want %s", n.Name, res, got.String(), q)
			}
			if got := n.Status.Allocatable[res]; got.String() != q {
				t.Errorf("%s allocatable %s = %s, want %s", n.Name, res, got.String(), q)
			}
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			t.Errorf("%s is not Ready: %+v", n.Name, n.Status.Conditions)
		}
		if n.Spec.Unschedulable || len(n.Spec.Taints) > 0 {
			t.Errorf("%s is unschedulable or tainted: %+v", n.Name, n.Spec)
		}
	}
	if seen != 2 {
		t.Fatalf("the scheduler user sees %d of the 2 fake GPU nodes", seen)
	}

	ns := newNamespace(t, ctx, "kubelet")
	pods := admin.Kube.CoreV1().Pods(ns)
	for _, name := range []string{"orphan", "trainer"} {
		if _, err := pods.Create(ctx, pendingPod(name, 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(pod, node string) {
		t.Helper()
		err := binder.Kube.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("binder binds %s to %s: %v", pod, node, err)
		}
	}
	bind("orphan", plain) // first, so the kubelet has seen it before it handles the trainer
	bind("trainer", big)

	var running *corev1.Pod
	err = harness.Poll(ctx, 30*time.Second, "trainer Running and Ready", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "trainer", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		running = p
		return p.Status.Phase == corev1.PodRunning && podReady(p), nil
	})
	if err != nil {
		t.Fatalf("%v; last status %s", err, toJSON(running.Status))
	}
	if running.Status.PodIP == "" || running.Status.StartTime == nil || len(running.Status.ContainerStatuses) != 1 ||
		running.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("running pod lacks a kubelet-like status: %s", toJSON(running.Status))
	}
	orphan, err := pods.Get(ctx, "orphan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if orphan.Status.Phase != corev1.PodPending {
		t.Errorf("a pod on a node without the fake kubelet became %s", orphan.Status.Phase)
	}

	// Evict as the scheduler does: a graceful delete. The API server only marks the pod; the
	// kubelet finishes it well before the 30 s grace period would end.
	grace := int64(30)
	result := &corev1.Pod{}
	err = sched.Kube.CoreV1().RESTClient().Delete().Namespace(ns).Resource("pods").Name("trainer").
		Body(&metav1.DeleteOptions{GracePeriodSeconds: &grace}).Do(ctx).Into(result)
	if err != nil {
		t.Fatalf("scheduler deletes the pod: %v", err)
	}
	if result.DeletionTimestamp == nil || result.DeletionGracePeriodSeconds == nil || *result.DeletionGracePeriodSeconds != grace {
		t.Fatalf("the delete was not graceful: deletionTimestamp %v grace %v", result.DeletionTimestamp, result.DeletionGracePeriodSeconds)
	}
	start := time.Now()
	err = harness.Poll(ctx, 15*time.Second, "trainer gone", func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, "trainer", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("graceful delete finished by the fake kubelet after %s", time.Since(start).Round(time.Millisecond))

	// Pods annotated to finish do, with their exit code: a job's worker succeeds, another fails.
	for name, code := range map[string]string{"worker-ok": "0", "worker-bad": "3"} {
		p := pendingPod(name, 1)
		p.Annotations = map[string]string{harness.RunForAnnotation: "1s", harness.ExitCodeAnnotation: code}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(name, small)
	}
	for name, phase := range map[string]corev1.PodPhase{"worker-ok": corev1.PodSucceeded, "worker-bad": corev1.PodFailed} {
		var last *corev1.Pod
		err := harness.Poll(ctx, 30*time.Second, name+" "+string(phase), func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			last = p
			return err == nil && p.Status.Phase == phase, err
		})
		if err != nil {
			t.Fatalf("%v; last status %s", err, toJSON(last.Status))
		}
		term := last.Status.ContainerStatuses[0].State.Terminated
		if term == nil || (phase == corev1.PodFailed) != (term.ExitCode == 3) || podReady(last) {
			t.Errorf("%s: container state %+v, ready %v", name, last.Status.ContainerStatuses[0].State, podReady(last))
		}
		ran := term.FinishedAt.Sub(last.Status.StartTime.Time)
		// (The kubelet counts from the stored, whole-second start time, so this holds exactly.)
		if ran < time.Second {
			t.Errorf("%s finished %s after it started, before its run-for of 1s", name, ran)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
