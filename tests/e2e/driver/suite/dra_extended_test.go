package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// DRA-backed extended resources (KEP-5004; the API server runs with the DRAExtendedResource
// gate): a DeviceClass with spec.extendedResourceName, two devices in a ResourceSlice on a node
// that reports none of the resource. A pod asking for the explicit name and one asking for the
// class's implicit name (deviceclass.resource.kubernetes.io/<class>) each get a distinct device
// in their BindRequest's extendedResourceClaimAllocation; a third finds none left and gets no
// BindRequest. The binder creates each pod's claim (annotated, owned by the pod), writes its
// allocation and reservation, names it in the pod's status.extendedResourceClaimStatus and
// binds the pod.
func TestLiveSchedulerDRAExtendedResource(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	node := "sched-drax-" + id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: node, GPUs: 0})
	ns := newNamespace(t, ctx, "sched-drax")
	cleanupPods(t, ns)
	queue := "drax-" + id
	createQueue(t, ctx, queue, 0)
	class := "accel-" + id
	driver := class + ".example.com"
	explicit := "example.com/accel-" + id
	implicit := "deviceclass.resource.kubernetes.io/" + class
	dc := obj(t, fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: %s}
spec:
  selectors:
  - cel: {expression: 'device.driver == "%s"'}
  extendedResourceName: %s
`, class, driver, explicit))
	if _, err := admin.Dynamic.Resource(deviceClassGVR).Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Dynamic.Resource(deviceClassGVR).Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	got, err := admin.Dynamic.Resource(deviceClassGVR).Get(ctx, class, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if name, _, _ := unstructured.NestedString(got.Object, "spec", "extendedResourceName"); name != explicit {
		t.Fatalf("spec.extendedResourceName not kept (%q): is the DRAExtendedResource gate on?", name)
	}
	slice := obj(t, fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: %s-accels}
spec:
  driver: %s
  nodeName: %s
  pool: {name: %s, generation: 1, resourceSliceCount: 1}
  devices:
  - name: accel-0
  - name: accel-1
`, node, driver, node, node))
	if _, err := admin.Dynamic.Resource(resourceSliceGVR).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Dynamic.Resource(resourceSliceGVR).Delete(context.Background(), node+"-accels", metav1.DeleteOptions{})
	})
	resourceOf := map[string]string{"drax-0": explicit, "drax-1": implicit, "drax-2": explicit}
	for _, name := range []string{"drax-0", "drax-1", "drax-2"} {
		createPodGroup(t, ctx, ns, name, queue, 1)
		p := pendingPod(name, 0)
		p.Labels["kai.scheduler/queue"] = queue
		p.Annotations = map[string]string{"pod-group-name": name}
		one := corev1.ResourceList{corev1.ResourceName(resourceOf[name]): *resourceQuantity(1)}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: one, Limits: one}
		if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	placed := []string{"drax-0", "drax-1"}
	startScheduler(t)
	brs := waitBindRequests(t, ctx, ns, placed)
	devices := map[string]string{}
	for pod, br := range brs {
		if pod == "drax-2" {
			t.Fatalf("drax-2 got a BindRequest with both devices taken: %s", toJSON(br.Object["spec"]))
		}
		selected, _, _ := unstructured.NestedString(br.Object, "spec", "selectedNode")
		ext, _, _ := unstructured.NestedMap(br.Object, "spec", "extendedResourceClaimAllocation")
		results, _, _ := unstructured.NestedSlice(ext, "allocation", "devices", "results")
		requests, _, _ := unstructured.NestedSlice(ext, "deviceRequests")
		mappings, _, _ := unstructured.NestedSlice(ext, "containerMappings")
		if selected != node || len(results) != 1 || len(requests) != 1 || len(mappings) != 1 {
			t.Fatalf("%s: selectedNode %q, extendedResourceClaimAllocation %s", pod, selected, toJSON(ext))
		}
		r := results[0].(map[string]interface{})
		req := requests[0].(map[string]interface{})
		m := mappings[0].(map[string]interface{})
		cls, _, _ := unstructured.NestedString(req, "exactly", "deviceClassName")
		if r["request"] != "container-0-request-0" || r["driver"] != driver || r["pool"] != node ||
			req["name"] != "container-0-request-0" || cls != class ||
			m["containerName"] != "main" || m["resourceName"] != resourceOf[pod] ||
			m["requestName"] != "container-0-request-0" {
			t.Errorf("%s: extendedResourceClaimAllocation %s", pod, toJSON(ext))
		}
		device, _ := r["device"].(string)
		if other, dup := devices[device]; dup {
			t.Errorf("%s and %s both got device %q", pod, other, device)
		}
		devices[device] = pod
	}

	startReadyBinder(t, ctx, "binder-sched-drax-e2e.log")
	for _, pod := range placed {
		waitBindRequestPhase(t, ctx, ns, pod, "Succeeded")
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := p.Status.ExtendedResourceClaimStatus
		if p.Spec.NodeName != node || st == nil || len(st.RequestMappings) != 1 ||
			st.RequestMappings[0].ResourceName != resourceOf[pod] ||
			st.RequestMappings[0].RequestName != "container-0-request-0" {
			t.Fatalf("%s: nodeName %q, status.extendedResourceClaimStatus %s", pod, p.Spec.NodeName, toJSON(st))
		}
		claim, err := admin.Dynamic.Resource(resourceClaimGVR).Namespace(ns).Get(ctx, st.ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: the claim its status names: %v", pod, err)
		}
		if claim.GetAnnotations()["resource.kubernetes.io/extended-resource-claim"] != "true" ||
			claim.GetGenerateName() != pod+"-extended-resources-" {
			t.Errorf("%s: claim metadata %s", pod, toJSON(claim.Object["metadata"]))
		}
		owners := claim.GetOwnerReferences()
		if len(owners) != 1 || owners[0].Kind != "Pod" || owners[0].Name != pod || owners[0].UID != p.UID ||
			owners[0].Controller == nil || !*owners[0].Controller {
			t.Errorf("%s: claim owners %s", pod, toJSON(owners))
		}
		status := claimStatus(t, ctx, ns, st.ResourceClaimName)
		results, _, _ := unstructured.NestedSlice(status, "allocation", "devices", "results")
		reserved, _, _ := unstructured.NestedSlice(status, "reservedFor")
		if len(results) != 1 || len(reserved) != 1 || results[0].(map[string]interface{})["device"] == "" {
			t.Errorf("claim of %s: status %s", pod, toJSON(status))
		} else if dev := results[0].(map[string]interface{})["device"].(string); devices[dev] != pod {
			t.Errorf("claim of %s holds %q, the BindRequest named another", pod, dev)
		}
	}
	// The third pod waits: still no BindRequest for it after further cycles.
	time.Sleep(3 * time.Second)
	items, err := bindRequests(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, br := range items {
		if pod, _, _ := unstructured.NestedString(br.Object, "spec", "podName"); pod == "drax-2" {
			t.Errorf("drax-2 got a BindRequest with both devices taken: %s", toJSON(br.Object["spec"]))
		}
	}
}
