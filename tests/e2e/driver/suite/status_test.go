package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// The status controllers end to end: `gantry podgroup-controller` and `gantry queue-controller`
// run as processes under their own users (deploy/rbac) next to the scheduler, the binder and the
// fake kubelet. Needs a control plane whose only nodes are the ones the test creates (CTest:
// e2e.status on the e2e.sched.up control plane).

// sameResources: two ResourceLists (as JSON maps) hold the same amounts; absent and empty are
// the same, and so are "1000m" and "1".
func sameResources(got map[string]interface{}, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for name, w := range want {
		g, ok := got[name].(string)
		if !ok {
			return false
		}
		gq, err1 := resource.ParseQuantity(g)
		wq, err2 := resource.ParseQuantity(w)
		if err1 != nil || err2 != nil || gq.Cmp(wq) != 0 {
			return false
		}
	}
	return true
}

func TestStatusControllers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "status-" + id, GPUs: 4})
	ns := newNamespace(t, ctx, "status")
	cleanupPods(t, ns)
	parent, leaf := "status-parent-"+id, "status-leaf-"+id
	createQueue(t, ctx, parent, 0)
	createQueue(t, ctx, leaf, 0)
	leafObj, err := admin.Dynamic.Resource(queueGVR).Get(ctx, leaf, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(leafObj.Object, parent, "spec", "parentQueue")
	if _, err := admin.Dynamic.Resource(queueGVR).Update(ctx, leafObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	startScheduler(t)
	liveBinder(t, "binder-status.log")
	startGantry(t, "podgroup-controller", "podgroup-controller",
		"--kubeconfig", env.Kubeconfig(harness.PodGroupControllerUser), "--leader-elect",
		"--namespace-for-leases", harness.Namespace, "--metrics-bind-address", "127.0.0.1:0")
	qc := startGantry(t, "queue-controller", "queue-controller",
		"--kubeconfig", env.Kubeconfig(harness.QueueControllerUser), "--leader-elect",
		"--namespace-for-leases", harness.Namespace, "--metrics-listen-address", "127.0.0.1:0",
		"--queue-label-to-metric-label", "team=team")

	// A gang of 2 pods, each 1 GPU and 250m CPU.
	const gang = "train"
	createPodGroup(t, ctx, ns, gang, leaf, 2)
	var pods []string
	for i := 0; i < 2; i++ {
		pod := pendingPod(fmt.Sprintf("%s-%d", gang, i), 1)
		pod.Labels["kai.scheduler/queue"] = leaf
		pod.Annotations = map[string]string{"pod-group-name": gang}
		pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("250m")
		if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, pod.Name)
	}
	waitRunning(t, ctx, ns, pods)

	held := map[string]string{"cpu": "500m", "nvidia.com/gpu": "2"}
	none := map[string]string{}
	waitStatus := func(what string, want map[string]string, wantNonPreemptible map[string]string) {
		t.Helper()
		var last string
		err := harness.Poll(ctx, 60*time.Second, what, func(ctx context.Context) (bool, error) {
			pg, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, gang, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			rs, _, _ := unstructured.NestedMap(pg.Object, "status", "resourcesStatus")
			req, _, _ := unstructured.NestedMap(rs, "requested")
			alloc, _, _ := unstructured.NestedMap(rs, "allocated")
			nonp, _, _ := unstructured.NestedMap(rs, "allocatedNonPreemptible")
			ok := sameResources(req, want) && sameResources(alloc, want) && sameResources(nonp, wantNonPreemptible)
			last = "podgroup resourcesStatus " + toJSON(rs)
			for _, q := range []string{leaf, parent} {
				obj, err := admin.Dynamic.Resource(queueGVR).Get(ctx, q, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				st, _, _ := unstructured.NestedMap(obj.Object, "status")
				qa, _, _ := unstructured.NestedMap(st, "allocated")
				qr, _, _ := unstructured.NestedMap(st, "requested")
				qn, _, _ := unstructured.NestedMap(st, "allocatedNonPreemptible")
				ok = ok && sameResources(qa, want) && sameResources(qr, want) && sameResources(qn, wantNonPreemptible)
				last += "; queue " + q + " status " + toJSON(st)
			}
			return ok, nil
		})
		if err != nil {
			t.Fatalf("%v; last seen: %s", err, last)
		}
	}
	// Training priority (no class: 50) is preemptible: allocatedNonPreemptible stays empty.
	waitStatus("PodGroup, leaf and parent queue hold the gang's requests", held, none)

	parentObj, err := admin.Dynamic.Resource(queueGVR).Get(ctx, parent, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if children, _, _ := unstructured.NestedStringSlice(parentObj.Object, "status", "childQueues"); strings.Join(children, ",") != leaf {
		t.Errorf("parent childQueues %v, want [%s]", children, leaf)
	}
	// `kubectl get queues` prints the Children column from status.childQueues (the CRD's
	// printer columns, served as a Table).
	tab := getTable(t, "/apis/scheduling.run.ai/v2/queues/"+parent)
	col := -1
	for i, c := range tab.ColumnDefinitions {
		if c.Name == "Children" {
			col = i
		}
	}
	if col < 0 || len(tab.Rows) != 1 || !strings.Contains(fmt.Sprint(tab.Rows[0].Cells[col]), leaf) {
		t.Errorf("kubectl get queue %s: Children column (index %d) does not show %s: %+v", parent, col, leaf, tab)
	}

	// KAI's queue metrics, in the kai namespace, with the extra label.
	port := qc.port(t)
	err = harness.Poll(ctx, 30*time.Second, "kai_queue_allocated_gpus of the leaf is 2", func(context.Context) (bool, error) {
		_, body := httpGet(t, port, "/metrics")
		return strings.Contains(body, fmt.Sprintf(`kai_queue_allocated_gpus{queue_name=%q,queue_metadata_name=%q,queue_display_name="",team=""} 2`, leaf, leaf)) &&
			strings.Contains(body, fmt.Sprintf(`kai_queue_allocated_cpu_cores{queue_name=%q,queue_metadata_name=%q,queue_display_name="",team=""} 0.5`, parent, parent)) &&
			strings.Contains(body, fmt.Sprintf(`kai_queue_info{queue_name=%q`, parent)), nil
	})
	if err != nil {
		_, body := httpGet(t, port, "/metrics")
		t.Errorf("%v\n%s", err, body)
	}
	if code, _ := httpGet(t, port, "/readyz"); code != 200 {
		t.Errorf("queue-controller /readyz %d", code)
	}

	// The pods go: everything back to zero.
	zero := int64(0)
	for _, p := range pods {
		if err := admin.Kube.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus("PodGroup and queues back to zero after the pods are deleted", none, none)
}
