package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// Pod annotations that would bypass queue limits or over-commit a node if read as numbers
// without range checks: a whole-GPU fraction on 2^31 devices (wraps to a negative GPU count in
// 32 bits), 1e19 MiB of GPU memory (past int64 once converted), and a fraction that a
// BindRequest's two-decimal portion would write as 0.00. The live scheduler must leave each such
// pod out with a warning event naming the annotation, and account for everything else exactly:
// a gang needing more than its queue's limit stays pending, and no node gets more GPUs than it
// has.
func TestLiveSchedulerRefusesQuotaBypass(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	node := "bypass-" + id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: node, GPUs: 8})
	ns := newNamespace(t, ctx, "sched-bypass")
	cleanupPods(t, ns)
	capped, open := "capped-"+id, "open-"+id
	createLimitedQueue(t, ctx, capped, 2, 2)
	createLimitedQueue(t, ctx, open, 0, -1)
	startScheduler(t)

	// The hostile pods first: had they been accepted, they would have changed the accounting of
	// everything created after them.
	bad := []struct{ pod, annotation, value string }{
		{"wrap", "gpu-fraction-num-devices", "2147483648"},
		{"huge-memory", "gpu-memory", "1e19"},
		{"zero-portion", "gpu-fraction", "0.004"},
	}
	for _, b := range bad {
		annotations := map[string]string{b.annotation: b.value}
		if b.annotation == "gpu-fraction-num-devices" {
			annotations["gpu-fraction"] = "1"
		}
		createAnnotatedPod(t, ctx, ns, b.pod, capped, annotations)
	}
	for _, b := range bad {
		field := "metadata.annotations." + b.annotation + ":"
		err := harness.Poll(ctx, 60*time.Second, "warning event on "+b.pod+" naming "+b.annotation, func(ctx context.Context) (bool, error) {
			evs, err := admin.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == b.pod && e.Type == "Warning" &&
					contains(e.Message, field) {
					t.Logf("%s: %s %q", b.pod, e.Reason, e.Message)
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Error(err)
		}
	}

	// Within the limit: one 2-GPU pod of the capped queue. Past it: a 2 x 2-GPU gang there, which
	// the node has room for (6 GPUs free): only the limit keeps it pending, for some cycles.
	small := createGang(t, ctx, ns, "small", capped, 1, 1, 2)
	big := createGang(t, ctx, ns, "big", capped, 2, 2, 2)
	waitBindRequests(t, ctx, ns, small)
	time.Sleep(3 * time.Second)
	items, err := bindRequests(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 {
		t.Errorf("%d BindRequests with the capped queue at its limit; want 1 (%s)", len(items), small[0])
	}
	// Then four 2-GPU pods of the unlimited queue for the 6 GPUs left on the node: three fit.
	var fill []string
	for i := 0; i < 4; i++ {
		fill = append(fill, createGang(t, ctx, ns, fmt.Sprintf("fill%d", i), open, 1, 1, 2)...)
	}
	err = harness.Poll(ctx, 60*time.Second, "BindRequests for three of the unlimited queue's pods", func(ctx context.Context) (bool, error) {
		var err error
		items, err = bindRequests(ctx, ns)
		return err == nil && len(items) >= 4, err
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // some cycles more: whatever would go past a limit has had its chance
	if items, err = bindRequests(ctx, ns); err != nil {
		t.Fatal(err)
	}
	queueOf := map[string]string{small[0]: capped, big[0]: capped, big[1]: capped}
	for _, p := range fill {
		queueOf[p] = open
	}
	perNode := map[string]int64{}
	perQueue := map[string]int64{}
	for _, br := range items {
		pod, _, _ := unstructured.NestedString(br.Object, "spec", "podName")
		selected, _, _ := unstructured.NestedString(br.Object, "spec", "selectedNode")
		count, _, _ := unstructured.NestedInt64(br.Object, "spec", "receivedGPU", "count")
		portion, _, _ := unstructured.NestedString(br.Object, "spec", "receivedGPU", "portion")
		q, known := queueOf[pod]
		if !known {
			t.Errorf("BindRequest for %s, a pod with a refused annotation", pod)
			continue
		}
		if portion != "1.00" || count != 2 {
			t.Errorf("%s: receivedGPU count %d portion %q, want 2 x 1.00", pod, count, portion)
		}
		perNode[selected] += count
		perQueue[q] += count
	}
	for _, p := range big {
		for _, br := range items {
			if name, _, _ := unstructured.NestedString(br.Object, "spec", "podName"); name == p {
				t.Errorf("%s of a 4-GPU gang got a BindRequest in a queue limited to 2 GPUs", p)
			}
		}
	}
	if perNode[node] > 8 || len(perNode) != 1 {
		t.Errorf("GPUs in BindRequests per node %v; the only node, %s, has 8", perNode, node)
	}
	if perQueue[capped] != 2 {
		t.Errorf("queue %s: %d GPUs in BindRequests, want 2 (its limit, the small pod)", capped, perQueue[capped])
	}
	if perQueue[open] != 6 {
		t.Errorf("queue %s: %d GPUs in BindRequests, want 6 (three of four pods fit the node)", open, perQueue[open])
	}
	t.Logf("GPUs in BindRequests: per node %v, per queue %v", perNode, perQueue)
}

// createLimitedQueue creates a queue with the given GPU quota and limit (-1: none).
func createLimitedQueue(t *testing.T, ctx context.Context, name string, quota, limit int) {
	t.Helper()
	q := obj(t, fmt.Sprintf(`
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %s}
spec:
  resources:
    gpu: {quota: %d, limit: %d, overQuotaWeight: 1}
    cpu: {quota: 0, limit: -1, overQuotaWeight: 1}
    memory: {quota: 0, limit: -1, overQuotaWeight: 1}
`, name, quota, limit))
	if _, err := admin.Dynamic.Resource(queueGVR).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		admin.Dynamic.Resource(queueGVR).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// createAnnotatedPod creates a one-pod PodGroup `name` in `queue` and its pod, which requests no
// nvidia.com/gpu and carries `annotations` (besides pod-group-name).
func createAnnotatedPod(t *testing.T, ctx context.Context, ns, name, queue string, annotations map[string]string) {
	t.Helper()
	createPodGroup(t, ctx, ns, name, queue, 1)
	pod := pendingPod(name, 0)
	pod.Labels["kai.scheduler/queue"] = queue
	pod.Annotations = map[string]string{"pod-group-name": name}
	for k, v := range annotations {
		pod.Annotations[k] = v
	}
	if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}
