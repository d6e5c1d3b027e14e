package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"gantry/tests/e2e/driver/harness"
)

var nrtGVR = schema.GroupVersionResource{Group: "topology.node.k8s.io", Version: "v1alpha2", Resource: "noderesourcetopologies"}

// numaSchedulerConfig is the default plugin list with the numa plugin (KAI enables it per shard;
// it is not in the default list).
const numaSchedulerConfig = `actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: proportion
  - name: priority
  - name: elastic
  - name: nodeavailability
  - name: resourcetype
  - name: subgrouporder
  - name: taskorder
  - name: nodeplacement
    arguments: {gpu: binpack, cpu: binpack}
  - name: numa
`

// createNRT publishes a node's NodeResourceTopology as NFD's topology-updater would: one zone of
// type Node per entry of zoneCPUs (that many CPUs, all available) and the Topology Manager
// policy as an attribute.
func createNRT(t *testing.T, ctx context.Context, node, policy string, zoneCPUs ...int) {
	t.Helper()
	zones := ""
	for i, cpus := range zoneCPUs {
		zones += fmt.Sprintf(`
- name: node-%d
  type: Node
  costs: [{name: node-%d, value: 10}]
  resources:
  - {name: cpu, capacity: "%d", allocatable: "%d", available: "%d"}
  - {name: memory, capacity: 32Gi, allocatable: 32Gi, available: 32Gi}`, i, i, cpus, cpus, cpus)
	}
	nrt := obj(t, fmt.Sprintf(`
apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata: {name: %s}
topologyPolicies: []
attributes:
- {name: topologyManagerPolicy, value: %s}
- {name: topologyManagerScope, value: container}
zones:%s
`, node, policy, zones))
	if _, err := admin.Dynamic.Resource(nrtGVR).Create(ctx, nrt, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create NodeResourceTopology %s: %v", node, err)
	}
	t.Cleanup(func() {
		admin.Dynamic.Resource(nrtGVR).Delete(context.Background(), node, metav1.DeleteOptions{})
	})
}

// cpuPod creates a one-pod PodGroup whose pod asks for `cpu` CPUs and 1Gi: with limits equal to
// the requests (the API server makes it Guaranteed) or without limits (Burstable). onNode, when
// set, pins it with a node selector.
func cpuPod(t *testing.T, ctx context.Context, ns, name, queue, cpu string, guaranteed bool, onNode string) {
	t.Helper()
	createPodGroup(t, ctx, ns, name, queue, 1)
	pod := pendingPod(name, 0)
	pod.Labels["kai.scheduler/queue"] = queue
	pod.Annotations = map[string]string{"pod-group-name": name}
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}
	pod.Spec.Containers[0].Resources.Requests = req
	if guaranteed {
		pod.Spec.Containers[0].Resources.Limits = req.DeepCopy()
	}
	if onNode != "" {
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": onNode}
	}
	created, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	want := corev1.PodQOSBurstable
	if guaranteed {
		want = corev1.PodQOSGuaranteed
	}
	if created.Status.QOSClass != want {
		t.Fatalf("pod %s: the API server set QoS class %q; the test needs %q", name, created.Status.QOSClass, want)
	}
}

func selectedNode(br unstructured.Unstructured) string {
	node, _, _ := unstructured.NestedString(br.Object, "spec", "selectedNode")
	return node
}

// NUMA-aware placement on the real API server: the scheduler watches NodeResourceTopology objects
// and, with the numa plugin on, places a Guaranteed pod (whole CPUs, requests == limits) only
// where the node's single-numa-node Topology Manager could align it.
//
// Two CPU nodes: "small" (8 CPUs in four 2-CPU NUMA zones) and "large" (16 CPUs in two 8-CPU
// zones). A filler pinned to small makes small the node CPU binpacking prefers; a Burstable pod
// (not NUMA-constrained) goes there, as the control. A Guaranteed 4-CPU pod fits small's free
// CPUs but no single zone of it, so it goes to large.
func TestLiveSchedulerNUMA(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	if err := env.ApplyTestCRDs(ctx, admin); err != nil {
		t.Fatalf("install the NodeResourceTopology CRD: %v", err)
	}
	small, large := "numa-small-"+id, "numa-large-"+id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: small, CPU: "8"}, harness.GPUNode{Name: large, CPU: "16"})
	createNRT(t, ctx, small, "single-numa-node", 2, 2, 2, 2)
	createNRT(t, ctx, large, "single-numa-node", 8, 8)
	ns := newNamespace(t, ctx, "sched-numa")
	cleanupPods(t, ns)
	queue := "numa-" + id
	createQueue(t, ctx, queue, 0)
	cfg := filepath.Join(t.TempDir(), "scheduler.yaml")
	writeFile(t, cfg, numaSchedulerConfig)
	startScheduler(t, "--config", cfg)

	cpuPod(t, ctx, ns, "filler", queue, "1", false, small)
	if got := selectedNode(waitBindRequests(t, ctx, ns, []string{"filler"})["filler"]); got != small {
		t.Fatalf("filler (pinned to %s) was sent to %s", small, got)
	}

	cpuPod(t, ctx, ns, "burstable", queue, "2", false, "")
	if got := selectedNode(waitBindRequests(t, ctx, ns, []string{"filler", "burstable"})["burstable"]); got != small {
		t.Fatalf("the Burstable pod went to %s; binpacking should prefer the fuller %s (the test's premise)", got, small)
	}

	start := time.Now()
	cpuPod(t, ctx, ns, "aligned", queue, "4", true, "")
	brs := waitBindRequests(t, ctx, ns, []string{"filler", "burstable", "aligned"})
	t.Logf("the Guaranteed pod's BindRequest %s after it was created", time.Since(start).Round(time.Millisecond))
	if got := selectedNode(brs["aligned"]); got != large {
		t.Errorf("the Guaranteed 4-CPU pod went to %s; want %s, the only node with a NUMA zone of 4 free CPUs", got, large)
	}
}
