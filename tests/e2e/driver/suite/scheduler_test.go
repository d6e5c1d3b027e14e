package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// The live scheduler (`gantry scheduler`) against the real API server: it runs as its own
// process with the gantry-scheduler user's kubeconfig (so deploy/'s RBAC is what it gets), and the
// tests assert on what it writes — BindRequests, pod deletions, PodGroup status — as KAI's binder
// and users would see it. These tests need a control plane whose only nodes are the ones they
// create (fair shares depend on the whole cluster): `GANTRY_E2E_NODES=0 run.sh up DIR`, as the
// CTest fixture e2e.sched.up does.

// startScheduler runs the scheduler until the test ends, then stops it with SIGTERM and checks
// it exits cleanly (code 0) within 10 seconds. `extra` are further flags (e.g. --config FILE).
func startScheduler(t *testing.T, extra ...string) *gantryProcess {
	t.Helper()
	// A short period keeps the functional tests quick; the throughput benchmark runs the
	// product's default (GANTRY_E2E_SCHEDULER_PERIOD=1s, set by perf.sh).
	period := os.Getenv("GANTRY_E2E_SCHEDULER_PERIOD")
	if period == "" {
		period = "200ms"
	}
	args := []string{"scheduler",
		"--kubeconfig", env.Kubeconfig(harness.SchedulerUser),
		"--scheduler-name", "kai-scheduler",
		"--period", period,
		"--namespace-for-leases", harness.Namespace,
		"--metrics-address", "127.0.0.1:0",
		// Several schedulers may run side by side on this host's loopback.
		"--plugin-server-port", "0"}
	return startGantry(t, "scheduler", append(args, extra...)...)
}

// exclusiveNodes creates the test's fake GPU nodes and skips the test when the cluster has other
// nodes (their capacity would change fair shares and placements).
func exclusiveNodes(t *testing.T, ctx context.Context, nodes ...harness.GPUNode) {
	t.Helper()
	existing, err := admin.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(existing.Items) > 0 {
		t.Skipf("needs a control plane without nodes (GANTRY_E2E_NODES=0 run.sh up); found %d", len(existing.Items))
	}
	for _, n := range nodes {
		if _, err := harness.CreateGPUNode(ctx, admin, n); err != nil {
			t.Fatalf("create node %s: %v", n.Name, err)
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			admin.Kube.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
		}
	})
}

// cleanupPods force-deletes the namespace's pods when the test ends (nothing else would: there is
// no controller-manager), so later tests see no leftovers.
func cleanupPods(t *testing.T, ns string) {
	t.Cleanup(func() {
		ctx := context.Background()
		zero := int64(0)
		admin.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
			metav1.ListOptions{})
		harness.Poll(ctx, 30*time.Second, "pods of "+ns+" gone", func(ctx context.Context) (bool, error) {
			pods, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 0, err
		})
	})
}

func createQueue(t *testing.T, ctx context.Context, name string, gpuQuota int) {
	t.Helper()
	q := obj(t, fmt.Sprintf(`
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %s}
spec:
  resources:
    gpu: {quota: %d, limit: -1, overQuotaWeight: 1}
    cpu: {quota: 0, limit: -1, overQuotaWeight: 1}
    memory: {quota: 0, limit: -1, overQuotaWeight: 1}
`, name, gpuQuota))
	if _, err := admin.Dynamic.Resource(queueGVR).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		admin.Dynamic.Resource(queueGVR).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// createPodGroup creates PodGroup ns/name in queue with the given gang minimum.
func createPodGroup(t *testing.T, ctx context.Context, ns, name, queue string, minMember int) {
	t.Helper()
	pg := obj(t, fmt.Sprintf(`
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: %s, namespace: %s, labels: {kai.scheduler/queue: %s}}
spec: {minMember: %d, queue: %s}
`, name, ns, queue, minMember, queue))
	if _, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create podgroup %s: %v", name, err)
	}
}

// createGang creates a PodGroup and its pods, as KAI's pod-grouper would for a training job: the
// pods carry schedulerName kai-scheduler, the kai.scheduler/queue label and the pod-group-name
// annotation.
func createGang(t *testing.T, ctx context.Context, ns, name, queue string, pods, minMember int, gpus int64) []string {
	t.Helper()
	createPodGroup(t, ctx, ns, name, queue, minMember)
	return createGangPods(t, ctx, ns, name, queue, pods, gpus)
}

// createGangPods creates the pods of PodGroup ns/name (pending, in queue, each asking for gpus).
func createGangPods(t *testing.T, ctx context.Context, ns, name, queue string, pods int, gpus int64) []string {
	t.Helper()
	var names []string
	for i := 0; i < pods; i++ {
		pod := pendingPod(fmt.Sprintf("%s-%d", name, i), gpus)
		pod.Labels["kai.scheduler/queue"] = queue
		pod.Annotations = map[string]string{"pod-group-name": name}
		if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
		names = append(names, pod.Name)
	}
	return names
}

func bindRequests(ctx context.Context, ns string) ([]unstructured.Unstructured, error) {
	list, err := admin.Dynamic.Resource(bindRequestGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitBindRequests waits until the pods named have one BindRequest each and returns them by pod.
func waitBindRequests(t *testing.T, ctx context.Context, ns string, pods []string) map[string]unstructured.Unstructured {
	t.Helper()
	byPod := map[string]unstructured.Unstructured{}
	err := harness.Poll(ctx, 60*time.Second, fmt.Sprintf("BindRequests for %v", pods), func(ctx context.Context) (bool, error) {
		items, err := bindRequests(ctx, ns)
		if err != nil {
			return false, err
		}
		byPod = map[string]unstructured.Unstructured{}
		for _, br := range items {
			pod, _, _ := unstructured.NestedString(br.Object, "spec", "podName")
			if _, dup := byPod[pod]; dup {
				return false, fmt.Errorf("two BindRequests for pod %s", pod)
			}
			byPod[pod] = br
		}
		for _, p := range pods {
			if _, ok := byPod[p]; !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return byPod
}

// playBinder does the binder's part for BindRequests (none exists in this test cluster): binds
// each request's pod to its selected node as the gantry-binder user, unless already bound.
func playBinder(t *testing.T, ctx context.Context, ns string, brs map[string]unstructured.Unstructured) {
	t.Helper()
	for pod, br := range brs {
		node, _, _ := unstructured.NestedString(br.Object, "spec", "selectedNode")
		err := binder.Kube.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("bind %s to %s: %v", pod, node, err)
		}
	}
}

func waitRunning(t *testing.T, ctx context.Context, ns string, pods []string) {
	t.Helper()
	for _, name := range pods {
		err := harness.Poll(ctx, 30*time.Second, name+" Running", func(ctx context.Context) (bool, error) {
			p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A gang of 4 pods x 2 GPUs on 2 nodes x 4 GPUs: one BindRequest per pod, as KAI's binder expects
// them, and no node over capacity.
func TestLiveSchedulerBindsGang(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "sched-a-" + id, GPUs: 4}, harness.GPUNode{Name: "sched-b-" + id, GPUs: 4})
	ns := newNamespace(t, ctx, "sched-gang")
	cleanupPods(t, ns)
	queue := "train-" + id
	createQueue(t, ctx, queue, 0)
	start := time.Now()
	sched := startScheduler(t)
	// A PodGroup naming a queue that does not exist is left out with a warning naming the field;
	// the rest is scheduled.
	createGang(t, ctx, ns, "lost", "no-such-queue-"+id, 1, 1, 1)
	pods := createGang(t, ctx, ns, "trainer", queue, 4, 4, 2)

	brs := waitBindRequests(t, ctx, ns, pods)
	t.Logf("4 BindRequests %s after the scheduler started", time.Since(start).Round(time.Millisecond))
	if _, ok := brs["lost-0"]; ok {
		t.Errorf("a pod of a PodGroup without a queue got a BindRequest")
	}
	err := harness.Poll(ctx, 30*time.Second, "warning event on the PodGroup without a queue", func(ctx context.Context) (bool, error) {
		evs, err := admin.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "PodGroup" && e.InvolvedObject.Name == "lost" && e.Type == "Warning" &&
				contains(e.Message, `spec.queue: unknown queue "no-such-queue-`+id+`"`) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Error(err)
	}
	perNode := map[string]int64{}
	for pod, br := range brs {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec := br.Object["spec"].(map[string]interface{})
		node, _ := spec["selectedNode"].(string)
		if node != "sched-a-"+id && node != "sched-b-"+id {
			t.Errorf("%s: selectedNode %q is not a test node", pod, node)
		}
		want := map[string]interface{}{"podName": pod, "selectedNode": node, "receivedResourceType": "Regular",
			"receivedGPU": map[string]interface{}{"count": 2, "portion": "1.00"}, "backoffLimit": 3}
		if !equalJSON(spec, want) {
			t.Errorf("%s: spec %s, want %s", pod, toJSON(spec), toJSON(want))
		}
		if br.GetName() != pod {
			t.Errorf("BindRequest %s is not named after its pod %s", br.GetName(), pod)
		}
		owners := br.GetOwnerReferences()
		if len(owners) != 1 || owners[0].Kind != "Pod" || owners[0].Name != pod || owners[0].UID != p.UID {
			t.Errorf("%s: ownerReferences %+v, want the pod (uid %s)", pod, owners, p.UID)
		}
		perNode[node] += 2
	}
	for node, gpus := range perNode {
		if gpus > 4 {
			t.Errorf("node %s got %d GPUs of BindRequests; it has 4", node, gpus)
		}
	}
	// KAI's start timestamp, persisted on the PodGroup for a restarted scheduler (RFC 3339, at
	// the cycle that placed the gang, so no earlier than the scheduler's start to the second).
	err = harness.Poll(ctx, 30*time.Second, "PodGroup annotation kai.scheduler/last-start-timestamp", func(ctx context.Context) (bool, error) {
		pg, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, "trainer", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		stamp := pg.GetAnnotations()["kai.scheduler/last-start-timestamp"]
		if stamp == "" {
			return false, nil
		}
		at, err := time.Parse(time.RFC3339, stamp)
		if err != nil || at.Before(start.Truncate(time.Second)) || at.After(time.Now()) {
			return false, fmt.Errorf("last-start-timestamp %q (parse error %v), scheduler started %s", stamp, err, start.UTC().Format(time.RFC3339))
		}
		return true, nil
	})
	if err != nil {
		t.Error(err)
	}
	// The process reports what it did under KAI's scheduler metric names (prefixed kai_, as a
	// live KAI exports them; TestLiveSchedulerMetrics checks every family).
	port := sched.port(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := httpGet(t, port, path); code != 200 {
			t.Errorf("%s: status %d", path, code)
		}
	}
	_, metrics := httpGet(t, port, "/metrics")
	for _, want := range []string{"\nkai_e2e_scheduling_latency_milliseconds ",
		"\nkai_open_session_latency_milliseconds ", `kai_action_scheduling_latency_milliseconds{action="allocate"}`,
		"\nkai_queue_fair_share_gpu{"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func httpGet(t *testing.T, port int, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The same gang when only 3 pods fit (another scheduler's pod holds 2 GPUs of one node): nothing
// is bound, and the PodGroup says why in KAI's UnschedulableOnNodePool condition.
func TestLiveSchedulerGangDoesNotFit(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	nodeB := "sched-b-" + id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "sched-a-" + id, GPUs: 4}, harness.GPUNode{Name: nodeB, GPUs: 4})
	ns := newNamespace(t, ctx, "sched-nofit")
	cleanupPods(t, ns)
	queue := "train-" + id
	createQueue(t, ctx, queue, 0)

	// A pod of another scheduler, bound by hand and running: it only occupies its node.
	other := pendingPod("other-scheduler", 2)
	other.Spec.SchedulerName = "default-scheduler"
	other.Spec.NodeName = nodeB
	if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, ns, []string{other.Name})

	startScheduler(t)
	createGang(t, ctx, ns, "trainer", queue, 4, 4, 2)

	// Until all four pods exist the job is not ready and gets KAI's default text; the condition
	// then names the shortage.
	var cond map[string]interface{}
	err := harness.Poll(ctx, 60*time.Second, "PodGroup unschedulable condition naming the GPU shortage", func(ctx context.Context) (bool, error) {
		pg, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, "trainer", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "schedulingConditions")
		for _, c := range conds {
			m := c.(map[string]interface{})
			if m["type"] == "UnschedulableOnNodePool" {
				cond = m
				msg, _ := m["message"].(string)
				return contains(msg, "didn't have enough resources: GPUs"), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v; last condition %s", err, toJSON(cond))
	}
	if cond["reason"] != "Unschedulable" || cond["status"] != "True" || cond["nodePool"] != "default" {
		t.Errorf("condition %s: want reason Unschedulable, status True, nodePool default", toJSON(cond))
	}
	msg, _ := cond["message"].(string)
	if !contains(msg, "Resources were found for 3 pods while 4 are required for gang scheduling") {
		t.Errorf("condition message does not say how many pods fit: %q", msg)
	}
	t.Logf("condition message: %q", msg)
	// The condition is written after the cycle's BindRequests: none may exist.
	items, err := bindRequests(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 0 {
		t.Errorf("%d BindRequests for a gang that does not fit", len(items))
	}
	// Each pod of the gang is marked as KAI marks it: PodScheduled=False, reason Unschedulable.
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("trainer-%d", i)
		err := harness.Poll(ctx, 30*time.Second, name+" PodScheduled=False", func(ctx context.Context) (bool, error) {
			p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == "Unschedulable" && c.Message != "" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	// And an event on the PodGroup carries the same text.
	err = harness.Poll(ctx, 30*time.Second, "Unschedulable event", func(ctx context.Context) (bool, error) {
		evs, err := admin.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "PodGroup" && e.InvolvedObject.Name == "trainer" && e.Reason == "Unschedulable" &&
				e.Message == msg {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Error(err)
	}

	// The other scheduler's pod leaves: the gang fits, is bound, and once every pod is bound the
	// condition is removed, as KAI's status updater removes it.
	if err := admin.Kube.CoreV1().Pods(ns).Delete(ctx, other.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	gang := []string{"trainer-0", "trainer-1", "trainer-2", "trainer-3"}
	playBinder(t, ctx, ns, waitBindRequests(t, ctx, ns, gang))
	waitRunning(t, ctx, ns, gang)
	err = harness.Poll(ctx, 60*time.Second, "scheduling conditions removed once the gang runs", func(ctx context.Context) (bool, error) {
		pg, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, "trainer", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "schedulingConditions")
		return len(conds) == 0, nil
	})
	if err != nil {
		t.Error(err)
	}
}

// Reclaim: queue A runs over its share on all 8 GPUs; queue B submits within its quota of 4. The
// scheduler evicts A's pods (graceful deletes the fake kubelet finishes), then B's pods get
// BindRequests.
func TestLiveSchedulerReclaim(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "sched-a-" + id, GPUs: 4}, harness.GPUNode{Name: "sched-b-" + id, GPUs: 4})
	ns := newNamespace(t, ctx, "sched-reclaim")
	cleanupPods(t, ns)
	queueA, queueB := "team-a-"+id, "team-b-"+id
	createQueue(t, ctx, queueA, 0)
	createQueue(t, ctx, queueB, 4)
	startScheduler(t)

	// A: four single-pod jobs of 2 GPUs fill the cluster; the test binds them as the binder would.
	var aPods []string
	for i := 0; i < 4; i++ {
		aPods = append(aPods, createGang(t, ctx, ns, fmt.Sprintf("a%d", i), queueA, 1, 1, 2)...)
	}
	playBinder(t, ctx, ns, waitBindRequests(t, ctx, ns, aPods))
	waitRunning(t, ctx, ns, aPods)

	start := time.Now()
	bPods := createGang(t, ctx, ns, "b", queueB, 2, 2, 2)
	brs := waitBindRequests(t, ctx, ns, append(append([]string{}, aPods...), bPods...))
	t.Logf("B's BindRequests %s after it was submitted", time.Since(start).Round(time.Millisecond))

	// Exactly enough of A was evicted: 4 GPUs, two pods, each with the scheduler's condition
	// recorded before it went (events) and gone now.
	remaining, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alive := map[string]bool{}
	for _, p := range remaining.Items {
		alive[p.Name] = true
	}
	var evicted []string
	for _, p := range aPods {
		if !alive[p] {
			evicted = append(evicted, p)
		}
	}
	if len(evicted) != 2 {
		t.Errorf("evicted %v of queue A's pods; want 2 (4 GPUs for B)", evicted)
	}
	evs, err := admin.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range evicted {
		found := false
		for _, e := range evs.Items {
			found = found || (e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == p && e.Reason == "Evict")
		}
		if !found {
			t.Errorf("no Evict event on pod %s", p)
		}
	}
	perNode := map[string]int64{}
	for _, p := range bPods {
		node, _, _ := unstructured.NestedString(brs[p].Object, "spec", "selectedNode")
		perNode[node] += 2
	}
	for _, p := range remaining.Items {
		if p.Spec.NodeName != "" && strings.HasPrefix(p.Name, "a") {
			perNode[p.Spec.NodeName] += 2
		}
	}
	for node, gpus := range perNode {
		if gpus > 4 {
			t.Errorf("node %s: %d GPUs of running pods and B's BindRequests; it has 4", node, gpus)
		}
	}
}

// Two replicas: one holds the gantry-scheduler Lease and schedules; when it stops (SIGTERM) it
// releases the Lease, the other takes over and schedules what comes next.
func TestLiveSchedulerLeaderElection(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "sched-a-" + id, GPUs: 4})
	ns := newNamespace(t, ctx, "sched-leader")
	cleanupPods(t, ns)
	queue := "train-" + id
	createQueue(t, ctx, queue, 0)

	holder := func(ctx context.Context) (string, error) {
		lease, err := admin.Kube.CoordinationV1().Leases(harness.Namespace).Get(ctx, "gantry-scheduler", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return "", err
		}
		return *lease.Spec.HolderIdentity, nil
	}
	waitHolder := func(p *gantryProcess, what string) {
		t.Helper()
		err := harness.Poll(ctx, 30*time.Second, what, func(ctx context.Context) (bool, error) {
			h, err := holder(ctx)
			return strings.HasSuffix(h, p.identitySuffix()), err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	first := startScheduler(t)
	waitHolder(first, "the first replica holds the Lease")
	second := startScheduler(t)
	waitBindRequests(t, ctx, ns, createGang(t, ctx, ns, "one", queue, 1, 1, 1))
	if h, err := holder(ctx); err != nil || !strings.HasSuffix(h, first.identitySuffix()) {
		t.Errorf("Lease holder %q (%v); want the first replica", h, err)
	}
	if contains(second.output(), "cycle ") {
		t.Errorf("the standby replica ran scheduling cycles:\n%s", second.output())
	}

	first.stop(t)
	waitHolder(second, "the second replica takes the released Lease")
	waitBindRequests(t, ctx, ns, createGang(t, ctx, ns, "two", queue, 1, 1, 1))
	// The cycle's log line is written after its BindRequests, and read from the process's pipe:
	// it may come a moment after the BindRequest is seen.
	if err := harness.Poll(ctx, 15*time.Second, "the new leader logs a cycle", func(context.Context) (bool, error) {
		return contains(second.output(), "cycle "), nil
	}); err != nil {
		t.Errorf("the new leader logged no cycle:\n%s", second.output())
	}
}

// The binder gives up on a BindRequest (phase Failed, no attempts left): the scheduler deletes it,
// as KAI's does, and asks again with a new one for the same pod.
func TestLiveSchedulerRetriesWhenTheBinderGivesUp(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "sched-a-" + id, GPUs: 4})
	ns := newNamespace(t, ctx, "sched-retry")
	cleanupPods(t, ns)
	queue := "train-" + id
	createQueue(t, ctx, queue, 0)
	startScheduler(t)
	pods := createGang(t, ctx, ns, "one", queue, 1, 1, 1)
	first := waitBindRequests(t, ctx, ns, pods)[pods[0]]

	failed := first.DeepCopy()
	unstructured.SetNestedField(failed.Object, "Failed", "status", "phase")
	unstructured.SetNestedField(failed.Object, "binding failed (set by the test)", "status", "reason")
	unstructured.SetNestedField(failed.Object, int64(3), "status", "failedAttempts")
	if _, err := binder.Dynamic.Resource(bindRequestGVR).Namespace(ns).UpdateStatus(ctx, failed, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("binder marks the BindRequest failed: %v", err)
	}
	err := harness.Poll(ctx, 30*time.Second, "a new BindRequest for "+pods[0], func(ctx context.Context) (bool, error) {
		br, err := admin.Dynamic.Resource(bindRequestGVR).Namespace(ns).Get(ctx, pods[0], metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(br.Object, "status", "phase")
		return br.GetUID() != first.GetUID() && phase == "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A gang inside its preemption delay (spec.preemptionDelay, counted from the PodGroup's creation)
// does not trigger evictions; once the delay has passed, it reclaims as any other gang would.
func TestLiveSchedulerPreemptionDelay(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "sched-delay-" + id, GPUs: 4})
	ns := newNamespace(t, ctx, "sched-delay")
	cleanupPods(t, ns)
	queueA, queueB := "delay-a-"+id, "delay-b-"+id
	createQueue(t, ctx, queueA, 0)
	createQueue(t, ctx, queueB, 4)
	startScheduler(t)

	var aPods []string
	for i := 0; i < 2; i++ {
		aPods = append(aPods, createGang(t, ctx, ns, fmt.Sprintf("a%d", i), queueA, 1, 1, 2)...)
	}
	playBinder(t, ctx, ns, waitBindRequests(t, ctx, ns, aPods))
	waitRunning(t, ctx, ns, aPods)

	const delay = 20 * time.Second
	pg := obj(t, fmt.Sprintf(`
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: b, namespace: %s, labels: {kai.scheduler/queue: %s}}
spec: {minMember: 1, queue: %s, preemptionDelay: 20s}
`, ns, queueB, queueB))
	created, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create podgroup b: %v", err)
	}
	start := created.GetCreationTimestamp().Time
	pod := pendingPod("b-0", 2)
	pod.Labels["kai.scheduler/queue"] = queueB
	pod.Annotations = map[string]string{"pod-group-name": "b"}
	if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod b-0: %v", err)
	}

	// Inside the delay: every pod of A keeps running, B gets no BindRequest.
	for time.Since(start) < delay-5*time.Second {
		time.Sleep(time.Second)
		for _, p := range aPods {
			if _, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, p, metav1.GetOptions{}); err != nil {
				t.Fatalf("pod %s is gone %s after B was created, inside its %s delay: %v",
					p, time.Since(start).Round(time.Second), delay, err)
			}
		}
		brs, err := bindRequests(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, br := range brs {
			if name, _, _ := unstructured.NestedString(br.Object, "spec", "podName"); name == "b-0" {
				t.Fatalf("b-0 got a BindRequest inside its preemption delay")
			}
		}
	}

	// After it: one of A's pods is evicted and B is placed.
	waitBindRequests(t, ctx, ns, append(append([]string{}, aPods...), "b-0"))
	if since := time.Since(start); since < delay {
		t.Errorf("B was placed %s after its creation, before its %s delay ended", since, delay)
	}
	remaining, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alive := 0
	for _, p := range remaining.Items {
		if strings.HasPrefix(p.Name, "a") {
			alive++
		}
	}
	if alive != 1 {
		t.Errorf("%d of A's pods remain after B reclaimed; want 1", alive)
	}
}

// Node pools (KAI's scheduling shards): a scheduler started with --partition-label-value serves
// the Nodes, Queues and PodGroups labelled with its pool; the default one those without the
// label. Each shard elects its own leader (lease gantry-scheduler-<pool>, which its Role must
// name, as docs/node-pools.md says), labels its BindRequests and bound pods with the pool, and
// writes a single-backoff PodGroup's condition for its pool with KAI's "Node-Pool" prefix.
func TestLiveSchedulerNodePools(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	pool := "pool-" + id
	const poolKey = "kai.scheduler/node-pool"
	nodeA, nodePlain := "sched-pa-"+id, "sched-pd-"+id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: nodePlain, GPUs: 8},
		harness.GPUNode{Name: nodeA, GPUs: 4, Labels: map[string]string{poolKey: pool}})
	ns := newNamespace(t, ctx, "sched-pools")
	cleanupPods(t, ns)

	// The shard's lease, as an operator adds it to the leader-election Role.
	roles := admin.Kube.RbacV1().Roles(harness.Namespace)
	role, err := roles.Get(ctx, "gantry-scheduler-leader-election", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original := role.DeepCopy()
	for i := range role.Rules {
		if len(role.Rules[i].ResourceNames) > 0 {
			role.Rules[i].ResourceNames = append(role.Rules[i].ResourceNames, "gantry-scheduler-"+pool)
		}
	}
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		current, err := roles.Get(context.Background(), original.Name, metav1.GetOptions{})
		if err == nil {
			current.Rules = original.Rules
			roles.Update(context.Background(), current, metav1.UpdateOptions{})
		}
	})

	qDefault, qPool := "plain-"+id, "pa-"+id
	createQueue(t, ctx, qDefault, 0)
	q := obj(t, fmt.Sprintf(`
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %s, labels: {%s: %s}}
spec:
  resources:
    gpu: {quota: 0, limit: -1, overQuotaWeight: 1}
    cpu: {quota: 0, limit: -1, overQuotaWeight: 1}
    memory: {quota: 0, limit: -1, overQuotaWeight: 1}
`, qPool, poolKey, pool))
	if _, err := admin.Dynamic.Resource(queueGVR).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Dynamic.Resource(queueGVR).Delete(context.Background(), qPool, metav1.DeleteOptions{})
	})

	startScheduler(t)
	shard := startScheduler(t, "--partition-label-value", pool)

	// One gang per pool, 2 pods of 2 GPUs each.
	createGang(t, ctx, ns, "in-default", qDefault, 2, 2, 2)
	gangInPool := func(name string, pods int, gpus int64, backoff string) []string {
		pg := obj(t, fmt.Sprintf(`
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: %s, namespace: %s, labels: {kai.scheduler/queue: %s, %s: %s}}
spec: {minMember: %d, queue: %s%s}
`, name, ns, qPool, poolKey, pool, pods, qPool, backoff))
		if _, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create podgroup %s: %v", name, err)
		}
		return createGangPods(t, ctx, ns, name, qPool, pods, gpus)
	}
	inPool := gangInPool("in-pool", 2, 2, "")
	brs := waitBindRequests(t, ctx, ns, append([]string{"in-default-0", "in-default-1"}, inPool...))
	for pod, br := range brs {
		node, _, _ := unstructured.NestedString(br.Object, "spec", "selectedNode")
		labels := br.GetLabels()
		want, wantPool := nodePlain, ""
		if contains(pod, "in-pool") {
			want, wantPool = nodeA, pool
		}
		if node != want || labels[poolKey] != wantPool || labels["selected-node"] != node {
			t.Errorf("BindRequest of %s: node %s, labels %v; want node %s, pool label %q", pod, node, labels, want, wantPool)
		}
	}
	// The shard labels the pods it placed with its pool.
	err = harness.Poll(ctx, 30*time.Second, "pods placed by the shard labelled with its pool", func(ctx context.Context) (bool, error) {
		for _, name := range inPool {
			p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Labels[poolKey] != pool {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Error(err)
	}
	lease, err := admin.Kube.CoordinationV1().Leases(harness.Namespace).Get(ctx, "gantry-scheduler-"+pool, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || !contains(*lease.Spec.HolderIdentity, shard.identitySuffix()) {
		t.Errorf("the shard's lease gantry-scheduler-%s: %v, %+v", pool, err, lease)
	}

	// A gang that fits only with the default pool's free GPUs stays pending in its own pool; tried
	// once (schedulingBackoff 1), its condition is for the pool, with KAI's prefix.
	gangInPool("too-big", 2, 2, ", schedulingBackoff: 1")
	var cond map[string]interface{}
	err = harness.Poll(ctx, 60*time.Second, "the pool's condition on the single-backoff gang", func(ctx context.Context) (bool, error) {
		pg, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, "too-big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "schedulingConditions")
		for _, c := range conds {
			cond = c.(map[string]interface{})
		}
		return len(conds) > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := cond["message"].(string)
	if cond["nodePool"] != pool || !strings.HasPrefix(msg, "Node-Pool '"+pool+"': ") {
		t.Errorf("condition %s: want nodePool %s and a message starting with KAI's Node-Pool prefix", toJSON(cond), pool)
	}
	// Tried once: the shard leaves it alone from now on, and the default shard never takes it.
	time.Sleep(2 * time.Second)
	items, err := bindRequests(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, br := range items {
		if pod, _, _ := unstructured.NestedString(br.Object, "spec", "podName"); contains(pod, "too-big") {
			t.Errorf("BindRequest for %s: the gang only fits on another pool's node", pod)
		}
	}
}
