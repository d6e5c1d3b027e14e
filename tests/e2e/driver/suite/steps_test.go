package suite

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"gantry/tests/e2e/driver/harness"
)

// The binder's GPU-sharing and DRA steps and the live scheduler's DRA support against the real
// API server.

var (
	resourceClaimGVR = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"}
	resourceSliceGVR = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"}
	deviceClassGVR   = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "deviceclasses"}
)

const (
	reservationNS       = "kai-resource-reservation"
	gpuIndexAnnotation  = "run.ai/reserve_for_gpu_index"
	gpuGroupLabel       = "runai-gpu-group"
	receivedTypeAnnoKey = "received-resource-type"
	// What the e2e binders get as --resource-reservation-pod-image.
	reservationImage = "registry.example.com/kai-scheduler/resource-reservation:e2e"
)

// playReservationContainers does what the container of KAI's GPU reservation pod does on a real
// node (the fake kubelet has no device plugin): each reservation pod of the GPU groups named (of
// every group when none is named) gets
// the GPU index `index` in its annotation run.ai/reserve_for_gpu_index, once it is bound to a
// node. It runs until ctx ends.
func playReservationContainers(ctx context.Context, t *testing.T, index string, groups ...string) {
	go func() {
		for ctx.Err() == nil {
			selectors := []string{gpuGroupLabel} // every group
			if len(groups) > 0 {
				selectors = nil
				for _, g := range groups {
					selectors = append(selectors, gpuGroupLabel+"="+g)
				}
			}
			for _, sel := range selectors {
				list, err := admin.Kube.CoreV1().Pods(reservationNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
				if err != nil {
					continue
				}
				for _, p := range list.Items {
					if p.Spec.NodeName == "" || p.Annotations[gpuIndexAnnotation] != "" {
						continue
					}
					patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, gpuIndexAnnotation, index)
					if _, err := admin.Kube.CoreV1().Pods(reservationNS).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
						t.Logf("annotating reservation pod %s: %v", p.Name, err)
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

func reservationPods(ctx context.Context, group string) ([]corev1.Pod, error) {
	list, err := admin.Kube.CoreV1().Pods(reservationNS).List(ctx, metav1.ListOptions{LabelSelector: gpuGroupLabel + "=" + group})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func startReadyBinder(t *testing.T, ctx context.Context, logName string) *binderProcess {
	t.Helper()
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	b := startBinder(t, bin, logName)
	t.Cleanup(func() {
		b.stop()
		if t.Failed() {
			t.Logf("binder log:\n%s", b.Log())
		}
	})
	if err := harness.Poll(ctx, 60*time.Second, "binder /readyz 200", func(ctx context.Context) (bool, error) {
		code, _, err := b.get("/readyz")
		return err == nil && code == 200, nil
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

func waitBindRequestPhase(t *testing.T, ctx context.Context, ns, name, want string) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	err := harness.Poll(ctx, 60*time.Second, "BindRequest "+name+" "+want, func(ctx context.Context) (bool, error) {
		u, err := admin.Dynamic.Resource(bindRequestGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = u
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == want, nil
	})
	if err != nil {
		status := map[string]interface{}{}
		if last != nil {
			status, _, _ = unstructured.NestedMap(last.Object, "status")
		}
		t.Fatalf("%v; status %s", err, toJSON(status))
	}
	return last
}

func fractionRequest(ns, name string, pod *corev1.Pod, node, group string) *unstructured.Unstructured {
	u := bindRequest(ns, name, pod, node, 0)
	spec := u.Object["spec"].(map[string]interface{})
	spec["receivedResourceType"] = "Fraction"
	spec["receivedGPU"] = map[string]interface{}{"count": int64(1), "portion": "0.50"}
	spec["selectedGPUGroups"] = []interface{}{group}
	return u
}

// A fractional pod (gpu-fraction 0.5) is bound once its GPU group's reservation pod exists on the
// node and reports its GPU index: the binder creates the reservation pod (KAI's namespace, labels,
// one nvidia.com/gpu, the node), waits for the index, labels the pod with its group and marks it
// Fraction. A second pod of the group reuses the reservation pod. A fractional bind that fails
// after the reservation (no room on the node) removes the reservation pod it made and the label.
func TestBinderGpuSharing(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	node, small := "e2e-frac-"+id, "e2e-frac-small-"+id
	if _, err := harness.CreateGPUNode(ctx, admin, harness.GPUNode{Name: node, GPUs: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := harness.CreateGPUNode(ctx, admin, harness.GPUNode{Name: small, GPUs: 8, CPU: "1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{node, small} {
			admin.Kube.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	ns := newNamespace(t, ctx, "frac")
	cleanupPods(t, ns)
	group, doomedGroup := "grp-"+id, "grp-doomed-"+id
	t.Cleanup(func() {
		zero := int64(0)
		for _, g := range []string{group, doomedGroup} {
			admin.Kube.CoreV1().Pods(reservationNS).DeleteCollection(context.Background(),
				metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: gpuGroupLabel + "=" + g})
		}
	})
	playCtx, stopPlaying := context.WithCancel(ctx)
	defer stopPlaying()
	playReservationContainers(playCtx, t, "3", group, doomedGroup)
	startReadyBinder(t, ctx, "binder-gpusharing-e2e.log")

	createFraction := func(name string, cpu string) *corev1.Pod {
		t.Helper()
		p := pendingPod(name, 0)
		p.Annotations = map[string]string{"gpu-fraction": "0.5"}
		if cpu != "" {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse(cpu)}
		}
		got, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	brs := admin.Dynamic.Resource(bindRequestGVR).Namespace(ns)

	for i, name := range []string{"half-a", "half-b"} {
		pod := createFraction(name, "")
		if _, err := brs.Create(ctx, fractionRequest(ns, name, pod, node, group), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitBindRequestPhase(t, ctx, ns, name, "Succeeded")
		got, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != node {
			t.Errorf("%s bound to %q, want %q", name, got.Spec.NodeName, node)
		}
		if got.Labels[gpuGroupLabel] != group {
			t.Errorf("%s labels %v, want %s=%s", name, got.Labels, gpuGroupLabel, group)
		}
		if got.Annotations[receivedTypeAnnoKey] != "Fraction" {
			t.Errorf("%s annotations %v, want %s=Fraction", name, got.Annotations, receivedTypeAnnoKey)
		}
		res, err := reservationPods(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 {
			t.Fatalf("after %d fractional pods of the group: %d reservation pods, want 1", i+1, len(res))
		}
		r := res[0]
		gpu := r.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
		if r.Spec.NodeName != node || !strings.HasPrefix(r.Name, "gpu-reservation-"+node+"-") ||
			r.Labels["app"] != "kai-resource-reservation" || r.Annotations[gpuIndexAnnotation] != "3" ||
			r.Spec.ServiceAccountName != "kai-resource-reservation" || gpu.Value() != 1 ||
			r.Spec.Containers[0].Image != reservationImage {
			t.Errorf("reservation pod %s: node %q labels %v annotations %v service account %q GPU limit %s image %q",
				r.Name, r.Spec.NodeName, r.Labels, r.Annotations, r.Spec.ServiceAccountName, gpu.String(),
				r.Spec.Containers[0].Image)
		}
	}

	// No room for the pod's CPU on the small node: the reservation is made, then rolled back.
	doomed := createFraction("half-doomed", "4")
	if _, err := brs.Create(ctx, fractionRequest(ns, "half-doomed", doomed, small, doomedGroup), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	br := waitBindRequestPhase(t, ctx, ns, "half-doomed", "Failed")
	reason, _, _ := unstructured.NestedString(br.Object, "status", "reason")
	if !strings.Contains(reason, "noderesources:") {
		t.Errorf("reason %q, want the node-room failure", reason)
	}
	res, err := reservationPods(ctx, doomedGroup)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.DeletionTimestamp == nil {
			t.Errorf("reservation pod %s of the failed bind is still there", r.Name)
		}
	}
	got, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, "half-doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "" || got.Labels[gpuGroupLabel] != "" {
		t.Errorf("after the failed bind: node %q, labels %v", got.Spec.NodeName, got.Labels)
	}

	// The group's pods are deleted: its reservation pod goes with the last (the binder syncs the
	// node on a fractional pod's deletion, as KAI's binder does; unit tests cover the pod that
	// stays while its group has a pod left).
	zero := int64(0)
	if err := admin.Kube.CoreV1().Pods(ns).Delete(ctx, "half-a", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	live := func() (int, error) {
		res, err := reservationPods(ctx, group)
		n := 0
		for _, r := range res {
			if r.DeletionTimestamp == nil {
				n++
			}
		}
		return n, err
	}
	if err := admin.Kube.CoreV1().Pods(ns).Delete(ctx, "half-b", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(ctx, 60*time.Second, "reservation pod of "+group+" deleted", func(ctx context.Context) (bool, error) {
		n, err := live()
		return n == 0, err
	}); err != nil {
		t.Fatal(err)
	}
}

func claimObject(t *testing.T, ns, name, class, queue string) *unstructured.Unstructured {
	return obj(t, fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: %s, namespace: %s, labels: {kai.scheduler/queue: %s}}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: %s, allocationMode: ExactCount, count: 1}
`, name, ns, queue, class))
}

func claimStatus(t *testing.T, ctx context.Context, ns, name string) map[string]interface{} {
	t.Helper()
	u, err := admin.Dynamic.Resource(resourceClaimGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	return status
}

// A pod with a ResourceClaim: the binder writes the allocation the BindRequest carries into the
// claim's status, reserves the claim for the pod, and binds it.
func TestBinderDRA(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	node := "e2e-dra-" + id
	if _, err := harness.CreateGPUNode(ctx, admin, harness.GPUNode{Name: node, GPUs: 0}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Kube.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	ns := newNamespace(t, ctx, "dra")
	cleanupPods(t, ns)
	if _, err := admin.Dynamic.Resource(resourceClaimGVR).Namespace(ns).Create(ctx,
		claimObject(t, ns, "gpu-claim", "gpu.example.com", "default-queue"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := pendingPod("with-claim", 0)
	claimName := "gpu-claim"
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claimName}}
	pod, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startReadyBinder(t, ctx, "binder-dra-e2e.log")

	allocation := map[string]interface{}{
		"devices": map[string]interface{}{"results": []interface{}{map[string]interface{}{
			"request": "gpus", "driver": "gpu.example.com", "pool": node, "device": "gpu-0"}}},
	}
	br := bindRequest(ns, "with-claim", pod, node, 0)
	spec := br.Object["spec"].(map[string]interface{})
	spec["receivedGPU"] = map[string]interface{}{"count": int64(0), "portion": "0.00"}
	spec["resourceClaimAllocations"] = []interface{}{map[string]interface{}{"name": "gpu", "allocation": allocation}}
	if _, err := admin.Dynamic.Resource(bindRequestGVR).Namespace(ns).Create(ctx, br, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBindRequestPhase(t, ctx, ns, "with-claim", "Succeeded")
	got, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, "with-claim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != node {
		t.Errorf("pod bound to %q, want %q", got.Spec.NodeName, node)
	}
	status := claimStatus(t, ctx, ns, "gpu-claim")
	results, _, _ := unstructured.NestedSlice(status, "allocation", "devices", "results")
	if len(results) != 1 || !equalJSON(results[0], allocation["devices"].(map[string]interface{})["results"].([]interface{})[0]) {
		t.Errorf("claim allocation %s, want %s", toJSON(status["allocation"]), toJSON(allocation))
	}
	reserved, _, _ := unstructured.NestedSlice(status, "reservedFor")
	want := []interface{}{map[string]interface{}{"resource": "pods", "name": "with-claim", "uid": string(pod.UID)}}
	if !equalJSON(reserved, want) {
		t.Errorf("claim reservedFor %s, want %s", toJSON(reserved), toJSON(want))
	}
}

// The live scheduler with DRA: a DeviceClass, a ResourceSlice with two GPUs on the only node, and
// two pods each with a claim for one GPU of the class. The scheduler places both on the node with
// different devices and writes the allocations into their BindRequests; the binder (a process
// too) writes them into the claims and binds the pods.
func TestLiveSchedulerDRA(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	node := "sched-dra-" + id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: node, GPUs: 0})
	ns := newNamespace(t, ctx, "sched-dra")
	cleanupPods(t, ns)
	queue := "dra-" + id
	createQueue(t, ctx, queue, 0)
	class := "gpu-" + id + ".example.com"
	dc := obj(t, fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: %s}
spec:
  selectors:
  - cel: {expression: 'device.driver == "%s"'}
`, class, class))
	if _, err := admin.Dynamic.Resource(deviceClassGVR).Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Dynamic.Resource(deviceClassGVR).Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	slice := obj(t, fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: %s-gpus}
spec:
  driver: %s
  nodeName: %s
  pool: {name: %s, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
  - name: gpu-1
`, node, class, node, node))
	if _, err := admin.Dynamic.Resource(resourceSliceGVR).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Dynamic.Resource(resourceSliceGVR).Delete(context.Background(), node+"-gpus", metav1.DeleteOptions{})
	})
	var pods []string
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("dra-%d", i)
		claim := name + "-claim"
		if _, err := admin.Dynamic.Resource(resourceClaimGVR).Namespace(ns).Create(ctx,
			claimObject(t, ns, claim, class, queue), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createPodGroup(t, ctx, ns, name, queue, 1)
		p := pendingPod(name, 0)
		p.Labels["kai.scheduler/queue"] = queue
		p.Annotations = map[string]string{"pod-group-name": name}
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
		if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, name)
	}
	startScheduler(t)
	brs := waitBindRequests(t, ctx, ns, pods)
	devices := map[string]string{}
	for pod, br := range brs {
		node2, _, _ := unstructured.NestedString(br.Object, "spec", "selectedNode")
		allocs, _, _ := unstructured.NestedSlice(br.Object, "spec", "resourceClaimAllocations")
		if node2 != node || len(allocs) != 1 {
			t.Fatalf("%s: selectedNode %q, resourceClaimAllocations %s", pod, node2, toJSON(allocs))
		}
		a := allocs[0].(map[string]interface{})
		results, _, _ := unstructured.NestedSlice(a, "allocation", "devices", "results")
		if a["name"] != "gpu" || len(results) != 1 {
			t.Fatalf("%s: resourceClaimAllocations %s", pod, toJSON(allocs))
		}
		r := results[0].(map[string]interface{})
		if r["request"] != "gpus" || r["driver"] != class || r["pool"] != node {
			t.Errorf("%s: allocation result %s", pod, toJSON(r))
		}
		device, _ := r["device"].(string)
		if other, dup := devices[device]; dup {
			t.Errorf("%s and %s both got device %q", pod, other, device)
		}
		devices[device] = pod
	}

	startReadyBinder(t, ctx, "binder-sched-dra-e2e.log")
	for _, pod := range pods {
		waitBindRequestPhase(t, ctx, ns, pod, "Succeeded")
		status := claimStatus(t, ctx, ns, pod+"-claim")
		results, _, _ := unstructured.NestedSlice(status, "allocation", "devices", "results")
		reserved, _, _ := unstructured.NestedSlice(status, "reservedFor")
		if len(results) != 1 || len(reserved) != 1 {
			t.Errorf("claim of %s: status %s", pod, toJSON(status))
		}
	}
	waitRunning(t, ctx, ns, pods)
}

// The live mode with a shared GPU: scheduler and binder as processes, one node with one GPU, pods
// asking for half a GPU (gpu-fraction 0.5). The first pod's bind makes the node's reservation pod
// (the test plays its container, which reports GPU index 0); the second pod joins the first's GPU
// group (the scheduler reads the group from the first pod's label) and reuses the reservation
// pod; a third does not fit and is reported unschedulable.
func TestLiveSchedulerFraction(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	node := "sched-frac-" + id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: node, GPUs: 1})
	ns := newNamespace(t, ctx, "sched-frac")
	cleanupPods(t, ns)
	t.Cleanup(func() {
		zero := int64(0)
		admin.Kube.CoreV1().Pods(reservationNS).DeleteCollection(context.Background(),
			metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	})
	queue := "frac-" + id
	createQueue(t, ctx, queue, 0)
	playCtx, stopPlaying := context.WithCancel(ctx)
	defer stopPlaying()
	playReservationContainers(playCtx, t, "0")
	createHalf := func(name string) {
		t.Helper()
		createPodGroup(t, ctx, ns, name, queue, 1)
		p := pendingPod(name, 0)
		p.Labels["kai.scheduler/queue"] = queue
		p.Annotations = map[string]string{"pod-group-name": name, "gpu-fraction": "0.5"}
		if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startScheduler(t)
	startReadyBinder(t, ctx, "binder-sched-frac-e2e.log")

	createHalf("half-0")
	waitBindRequestPhase(t, ctx, ns, "half-0", "Succeeded")
	waitRunning(t, ctx, ns, []string{"half-0"})
	first, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, "half-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	group := first.Labels[gpuGroupLabel]
	if group == "" || first.Spec.NodeName != node || first.Annotations[receivedTypeAnnoKey] != "Fraction" {
		t.Fatalf("half-0: node %q labels %v annotations %v", first.Spec.NodeName, first.Labels, first.Annotations)
	}

	createHalf("half-1")
	createHalf("half-2")
	brs := waitBindRequests(t, ctx, ns, []string{"half-0", "half-1"})
	groups, _, _ := unstructured.NestedStringSlice(brs["half-1"].Object, "spec", "selectedGPUGroups")
	if len(groups) != 1 || groups[0] != group {
		t.Errorf("half-1 selectedGPUGroups %v, want the group of half-0 %q", groups, group)
	}
	waitBindRequestPhase(t, ctx, ns, "half-1", "Succeeded")
	second, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, "half-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if second.Spec.NodeName != node || second.Labels[gpuGroupLabel] != group {
		t.Errorf("half-1: node %q labels %v, want %s on the group %s", second.Spec.NodeName, second.Labels, node, group)
	}
	res, err := admin.Kube.CoreV1().Pods(reservationNS).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Labels[gpuGroupLabel] != group {
		t.Errorf("reservation pods on the node: %d (want 1 of group %s)", len(res.Items), group)
	}
	err = harness.Poll(ctx, 30*time.Second, "half-2 reported unschedulable", func(ctx context.Context) (bool, error) {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, "half-2", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == "Unschedulable" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Error(err)
	}
	if items, err := bindRequests(ctx, ns); err == nil {
		for _, br := range items {
			if br.GetName() == "half-2" {
				t.Errorf("half-2 got a BindRequest on a full GPU: %s", toJSON(br.Object["spec"]))
			}
		}
	}
}

// The binder's rights for GPU sharing (deploy/rbac/binder.yaml): it creates, watches and deletes
// reservation pods in kai-resource-reservation only, patches pods (group labels) and manages
// GPU-sharing configmaps; it still cannot create or delete pods elsewhere.
func TestRBACBinderReservationPods(t *testing.T) {
	ctx := ctxFor(t)
	accessReview(t, ctx, binder, []check{
		allow("create", "", "pods", "", reservationNS), allow("delete", "", "pods", "", reservationNS),
		allow("list", "", "pods", "", reservationNS), allow("watch", "", "pods", "", reservationNS),
		allow("patch", "", "pods", "", workNS),
		allow("get", "", "configmaps", "", workNS), allow("create", "", "configmaps", "", workNS),
		allow("patch", "", "configmaps", "", workNS), allow("delete", "", "configmaps", "", workNS),
		deny("create", "", "pods", "", workNS), deny("delete", "", "pods", "", workNS),
		deny("update", "", "pods", "", reservationNS), deny("update", "", "pods", "status", reservationNS),
	})
}
