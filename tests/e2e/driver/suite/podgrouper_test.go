package suite

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"gantry/tests/e2e/driver/harness"
)

// The pod-grouper (`gantry podgrouper`) against the real API server, as its own process under the
// gantry-podgrouper user (deploy/rbac/podgrouper.yaml), with the scheduler and the binder running
// beside it: pods written as for KAI — no PodGroup, only the queue label and schedulerName — are
// grouped and bound. There is no controller-manager in this control plane, so each test creates
// the pods a workload's controller would create, with the ownerReferences and labels that
// controller sets.

func startPodGrouper(t *testing.T) *gantryProcess {
	t.Helper()
	return startGantry(t, "podgrouper", "podgrouper",
		"--kubeconfig", env.Kubeconfig(harness.PodGrouperUser),
		"--scheduler-name", "kai-scheduler",
		"--namespace-for-leases", harness.Namespace,
		"--metrics-address", "127.0.0.1:0")
}

// podGroupOf waits until the pod names a PodGroup that exists, and returns both.
func podGroupOf(t *testing.T, ctx context.Context, ns, pod string) (*corev1.Pod, *unstructured.Unstructured) {
	t.Helper()
	var p *corev1.Pod
	var pg *unstructured.Unstructured
	err := harness.Poll(ctx, 30*time.Second, pod+" grouped", func(ctx context.Context) (bool, error) {
		got, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		name := got.Annotations["pod-group-name"]
		if name == "" {
			return false, nil
		}
		g, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		p, pg = got, g
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, pg
}

func waitBound(t *testing.T, ctx context.Context, ns string, pods ...string) {
	t.Helper()
	for _, name := range pods {
		err := harness.Poll(ctx, 60*time.Second, name+" bound", func(ctx context.Context) (bool, error) {
			p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Spec.NodeName != "", err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func int64At(u *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, fields...)
	return v
}

func ownerOf(u *unstructured.Unstructured) metav1.OwnerReference {
	refs := u.GetOwnerReferences()
	if len(refs) != 1 {
		return metav1.OwnerReference{}
	}
	return refs[0]
}

// ownedPod is a pending pod as a controller creates it: owned by `owner` (controller: true).
func ownedPod(name, queue string, gpus int64, owner *unstructured.Unstructured, labels map[string]string) *corev1.Pod {
	pod := pendingPod(name, gpus)
	pod.Labels = map[string]string{}
	if queue != "" {
		pod.Labels["kai.scheduler/queue"] = queue
	}
	for k, v := range labels {
		pod.Labels[k] = v
	}
	yes := true
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(),
		Name: owner.GetName(), UID: owner.GetUID(), Controller: &yes}}
	return pod
}

func createObject(t *testing.T, ctx context.Context, ns string, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	o.SetNamespace(ns)
	res, err := admin.Resource(o)
	if err != nil {
		t.Fatalf("%s: %v", o.GetKind(), err)
	}
	got, err := res.Create(ctx, o, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return got
}

func createPods(t *testing.T, ctx context.Context, ns string, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
}

// KAI's quickstart pods, unchanged but for their names: one with only the queue label, one
// asking for a GPU. Each is bound, in a PodGroup of its own the pod-grouper wrote (minMember 1,
// the pod's queue, owned by the pod).
func TestPodGrouperQuickstartPods(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "pg-quick-" + id, GPUs: 2})
	ns := newNamespace(t, ctx, "pg-quick")
	cleanupPods(t, ns)
	queue := "quick-" + id
	createQueue(t, ctx, queue, 0)
	startPodGrouper(t)
	startScheduler(t)
	liveBinder(t, "binder")

	cpu := pendingPod("pod-1", 0)
	cpu.Labels = map[string]string{"kai.scheduler/queue": queue}
	gpu := pendingPod("gpu-pod", 1)
	gpu.Labels = map[string]string{"kai.scheduler/queue": queue}
	createPods(t, ctx, ns, cpu, gpu)
	for _, name := range []string{"pod-1", "gpu-pod"} {
		pod, pg := podGroupOf(t, ctx, ns, name)
		if q, _, _ := unstructuredString(pg, "spec", "queue"); q != queue {
			t.Errorf("%s: PodGroup queue %q, want %q", name, q, queue)
		}
		if m := int64At(pg, "spec", "minMember"); m != 1 {
			t.Errorf("%s: PodGroup minMember %d, want 1", name, m)
		}
		if o := ownerOf(pg); o.Kind != "Pod" || o.UID != pod.UID {
			t.Errorf("%s: PodGroup owner %+v, want the pod", name, o)
		}
		if pc, _, _ := unstructuredString(pg, "spec", "priorityClassName"); pc != "train" {
			t.Errorf("%s: PodGroup priority class %q, want KAI's default train", name, pc)
		}
	}
	waitBound(t, ctx, ns, "pod-1", "gpu-pod")
}

// KAI's half-GPU quickstart pod (docs/gpu-sharing/gpu-sharing.yaml), unchanged but for its name
// and queue: the queue label and the gpu-fraction 0.5 annotation, no PodGroup. The pod-grouper
// writes its PodGroup (minMember 1, the pod's queue, owned by the pod); the scheduler gives it
// half of the node's one GPU and the binder binds it through the GPU's reservation pod (the test
// plays the reservation pod's container, which reports GPU index 0).
func TestPodGrouperQuickstartHalfGPU(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	node := "pg-half-" + id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: node, GPUs: 1})
	ns := newNamespace(t, ctx, "pg-half")
	cleanupPods(t, ns)
	t.Cleanup(func() {
		zero := int64(0)
		admin.Kube.CoreV1().Pods(reservationNS).DeleteCollection(context.Background(),
			metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	})
	queue := "half-" + id
	createQueue(t, ctx, queue, 0)
	playCtx, stopPlaying := context.WithCancel(ctx)
	defer stopPlaying()
	playReservationContainers(playCtx, t, "0")
	startPodGrouper(t)
	startScheduler(t)
	startReadyBinder(t, ctx, "binder-pg-half-e2e.log")

	half := obj(t, `
apiVersion: v1
kind: Pod
metadata:
  name: gpu-sharing
  labels:
    kai.scheduler/queue: `+queue+`
  annotations:
    gpu-fraction: "0.5"
spec:
  schedulerName: kai-scheduler
  containers:
    - name: gpu-workload
      image: nvidia/cuda:13.0.2-base-ubi8
      command: ["nvidia-smi"]
      args: ["-L"]
`)
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(half.Object, &pod); err != nil {
		t.Fatal(err)
	}
	createPods(t, ctx, ns, &pod)
	got, pg := podGroupOf(t, ctx, ns, "gpu-sharing")
	if q, _, _ := unstructuredString(pg, "spec", "queue"); q != queue {
		t.Errorf("PodGroup queue %q, want %q", q, queue)
	}
	if m := int64At(pg, "spec", "minMember"); m != 1 {
		t.Errorf("PodGroup minMember %d, want 1", m)
	}
	if o := ownerOf(pg); o.Kind != "Pod" || o.UID != got.UID {
		t.Errorf("PodGroup owner %+v, want the pod", o)
	}
	waitBindRequestPhase(t, ctx, ns, "gpu-sharing", "Succeeded")
	waitBound(t, ctx, ns, "gpu-sharing")
	bound, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, "gpu-sharing", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bound.Spec.NodeName != node || bound.Labels[gpuGroupLabel] == "" ||
		bound.Annotations[receivedTypeAnnoKey] != "Fraction" {
		t.Errorf("gpu-sharing: node %q labels %v annotations %v, want a fraction of %s's GPU",
			bound.Spec.NodeName, bound.Labels, bound.Annotations, node)
	}
}

// A batch/v1 Job of parallelism 4 (kai.scheduler/batch-min-member 4, KAI v0.17's way to make a
// Job a gang) on 2 nodes x 2 GPUs, 1 GPU per pod: one PodGroup owned by the Job, all 4 bound.
// Deleting the PodGroup's pods' grouping is not tested here (no garbage collector).
func TestPodGrouperJobGang(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "pg-job-a-" + id, GPUs: 2}, harness.GPUNode{Name: "pg-job-b-" + id, GPUs: 2})
	ns := newNamespace(t, ctx, "pg-job")
	cleanupPods(t, ns)
	queue := "jobs-" + id
	createQueue(t, ctx, queue, 0)
	startPodGrouper(t)
	startScheduler(t)
	liveBinder(t, "binder")

	job := createObject(t, ctx, ns, obj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata:
  name: trainer
  labels: {kai.scheduler/queue: %s}
  annotations: {kai.scheduler/batch-min-member: "4"}
spec:
  parallelism: 4
  completions: 4
  suspend: true
  template:
    spec:
      schedulerName: kai-scheduler
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
`, queue)))
	var names []string
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("trainer-%d", i)
		names = append(names, name)
		createPods(t, ctx, ns, ownedPod(name, queue, 1, job, map[string]string{"batch.kubernetes.io/job-name": "trainer"}))
	}
	want := fmt.Sprintf("pg-trainer-%s", job.GetUID())
	for _, name := range names {
		_, pg := podGroupOf(t, ctx, ns, name)
		if pg.GetName() != want {
			t.Fatalf("%s in PodGroup %s, want %s (one per Job)", name, pg.GetName(), want)
		}
		if m := int64At(pg, "spec", "minMember"); m != 4 {
			t.Errorf("PodGroup minMember %d, want 4", m)
		}
		if o := ownerOf(pg); o.Kind != "Job" || o.UID != job.GetUID() {
			t.Errorf("PodGroup owner %+v, want the Job", o)
		}
	}
	waitBound(t, ctx, ns, names...)
}

// A Deployment's pods (through its ReplicaSet): one PodGroup per pod, owned by the pod, priority
// class inference, as KAI does.
func TestPodGrouperDeploymentPods(t *testing.T) {
	withoutControllers(t)
	ctx := ctxFor(t)
	ns := newNamespace(t, ctx, "pg-deploy")
	cleanupPods(t, ns)
	startPodGrouper(t)
	deploy := createObject(t, ctx, ns, obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {kai.scheduler/queue: default-queue}}
spec:
  replicas: 3
  paused: true
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: kai-scheduler
      containers: [{name: main, image: busybox}]
`))
	rs := obj(t, `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-5d4f, labels: {app: web}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: kai-scheduler
      containers: [{name: main, image: busybox}]
`)
	yes := true
	rs.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web",
		UID: deploy.GetUID(), Controller: &yes}})
	rs = createObject(t, ctx, ns, rs)
	groups := map[string]bool{}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("web-5d4f-%d", i)
		createPods(t, ctx, ns, ownedPod(name, "", 0, rs, map[string]string{"app": "web"}))
		pod, pg := podGroupOf(t, ctx, ns, name)
		groups[pg.GetName()] = true
		if o := ownerOf(pg); o.Kind != "Pod" || o.UID != pod.UID {
			t.Errorf("%s: PodGroup owner %+v, want the pod", name, o)
		}
		if q, _, _ := unstructuredString(pg, "spec", "queue"); q != "default-queue" {
			t.Errorf("%s: queue %q, want the Deployment's default-queue", name, q)
		}
		if pc, _, _ := unstructuredString(pg, "spec", "priorityClassName"); pc != "inference" {
			t.Errorf("%s: priority class %q, want inference", name, pc)
		}
	}
	if len(groups) != 3 {
		t.Errorf("%d PodGroups for 3 Deployment pods, want one per pod", len(groups))
	}
}

// crd installs a namespaced CRD of group/kind whose schema keeps every field (the pod-grouper
// reads the fields of the real types, which the test writes), served at `versions`.
func crd(t *testing.T, ctx context.Context, group, kind, plural string, versions ...string) {
	t.Helper()
	var vs []string
	for i, v := range versions {
		vs = append(vs, fmt.Sprintf(`
  - name: %s
    served: true
    storage: %v
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}`, v, i == 0))
	}
	o := obj(t, fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s.%s}
spec:
  group: %s
  scope: Namespaced
  names: {kind: %s, plural: %s, singular: %s, listKind: %sList}
  versions:%s
`, plural, group, group, kind, plural, strings.ToLower(kind), kind, strings.Join(vs, "")))
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := admin.Dynamic.Resource(gvr).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD %s: %v", o.GetName(), err)
	}
	err := harness.Poll(ctx, 30*time.Second, "CRD "+o.GetName()+" established", func(ctx context.Context) (bool, error) {
		got, err := admin.Dynamic.Resource(gvr).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]interface{})
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	admin.Mapper.Reset()
}

func subGroupsOf(pg *unstructured.Unstructured) map[string]map[string]interface{} {
	out := map[string]map[string]interface{}{}
	list, _, _ := unstructured.NestedSlice(pg.Object, "spec", "subGroups")
	for _, item := range list {
		m, _ := item.(map[string]interface{})
		name, _ := m["name"].(string)
		out[name] = m
	}
	return out
}

func subGroupLabel(t *testing.T, ctx context.Context, ns, pod, want string) {
	t.Helper()
	err := harness.Poll(ctx, 30*time.Second, pod+" sub-group label "+want, func(ctx context.Context) (bool, error) {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		return err == nil && p.Labels["kai.scheduler/subgroup-name"] == want, err
	})
	if err != nil {
		t.Error(err)
	}
}

// Kubeflow, Ray, JobSet and LeaderWorkerSet workloads (their CRDs with schemas that keep every
// field) and the pods their operators would create: PyTorchJob master + 3 workers as one gang of
// 4 with master / worker sub-groups; a RayJob's head and worker group as sub-groups; a JobSet with
// two replicated jobs as a two-level tree; LeaderWorkerSet groups of size 4.
func TestPodGrouperOperatorWorkloads(t *testing.T) {
	ctx := ctxFor(t)
	ns := newNamespace(t, ctx, "pg-ops")
	cleanupPods(t, ns)
	crd(t, ctx, "kubeflow.org", "PyTorchJob", "pytorchjobs", "v1")
	crd(t, ctx, "ray.io", "RayJob", "rayjobs", "v1")
	crd(t, ctx, "ray.io", "RayCluster", "rayclusters", "v1")
	crd(t, ctx, "jobset.x-k8s.io", "JobSet", "jobsets", "v1alpha2")
	crd(t, ctx, "leaderworkerset.x-k8s.io", "LeaderWorkerSet", "leaderworkersets", "v1")
	startPodGrouper(t)

	t.Run("PyTorchJob", func(t *testing.T) {
		job := createObject(t, ctx, ns, obj(t, `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, labels: {kai.scheduler/queue: default-queue}}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
    Worker: {replicas: 3, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
`))
		roles := map[string]string{"pt-master-0": "master", "pt-worker-0": "worker", "pt-worker-1": "worker", "pt-worker-2": "worker"}
		for name, role := range roles {
			createPods(t, ctx, ns, ownedPod(name, "", 1, job, map[string]string{
				"training.kubeflow.org/replica-type": role, "training.kubeflow.org/job-name": "pt"}))
		}
		for name, role := range roles {
			_, pg := podGroupOf(t, ctx, ns, name)
			if pg.GetName() != "pg-pt-"+string(job.GetUID()) || int64At(pg, "spec", "minMember") != 4 {
				t.Errorf("%s: PodGroup %s minMember %d, want pg-pt-<uid> with 4", name, pg.GetName(), int64At(pg, "spec", "minMember"))
			}
			sgs := subGroupsOf(pg)
			if fmt.Sprint(sgs["master"]["minMember"]) != "1" || fmt.Sprint(sgs["worker"]["minMember"]) != "3" {
				t.Errorf("sub-groups %v, want master 1 and worker 3", sgs)
			}
			subGroupLabel(t, ctx, ns, name, role)
		}
	})

	t.Run("RayJob", func(t *testing.T) {
		cluster := createObject(t, ctx, ns, obj(t, `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rj-raycluster}
spec:
  headGroupSpec: {template: {spec: {containers: [{name: head, image: busybox}]}}}
  workerGroupSpecs:
  - {groupName: gpu-workers, replicas: 2, minReplicas: 2, template: {spec: {containers: [{name: w, image: busybox}]}}}
`))
		job := obj(t, `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj, labels: {kai.scheduler/queue: default-queue}}
spec: {entrypoint: python run.py}
`)
		job = createObject(t, ctx, ns, job)
		// KubeRay records the cluster it created in the RayJob's status.
		unstructuredSet(job, "rj-raycluster", "status", "rayClusterName")
		res, _ := admin.Resource(job)
		if _, err := res.UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
			// The CRD has no status subresource: the status is part of the object.
			if _, err := res.Update(ctx, job, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("set RayJob status: %v", err)
			}
		}
		yes := true
		owner := []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "rj", UID: job.GetUID(), Controller: &yes}}
		cluster.SetOwnerReferences(owner)
		res, _ = admin.Resource(cluster)
		if _, err := res.Update(ctx, cluster, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("own RayCluster: %v", err)
		}
		cluster, _ = res.Get(ctx, "rj-raycluster", metav1.GetOptions{})
		groups := map[string]string{"rj-head": "headgroup", "rj-worker-0": "gpu-workers", "rj-worker-1": "gpu-workers"}
		for name, group := range groups {
			createPods(t, ctx, ns, ownedPod(name, "", 0, cluster, map[string]string{"ray.io/group": group}))
		}
		for name, group := range groups {
			_, pg := podGroupOf(t, ctx, ns, name)
			if int64At(pg, "spec", "minMember") != 3 || ownerOf(pg).Kind != "RayJob" {
				t.Errorf("%s: PodGroup minMember %d owner %+v, want 3 and the RayJob", name, int64At(pg, "spec", "minMember"), ownerOf(pg))
			}
			sgs := subGroupsOf(pg)
			if fmt.Sprint(sgs["headgroup"]["minMember"]) != "1" || fmt.Sprint(sgs["gpu-workers"]["minMember"]) != "2" {
				t.Errorf("sub-groups %v, want headgroup 1 and gpu-workers 2", sgs)
			}
			subGroupLabel(t, ctx, ns, name, group)
		}
	})

	t.Run("JobSet", func(t *testing.T) {
		js := createObject(t, ctx, ns, obj(t, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, labels: {kai.scheduler/queue: default-queue}}
spec:
  replicatedJobs:
  - {name: driver, replicas: 1, template: {spec: {parallelism: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}}}
  - {name: workers, replicas: 2, template: {spec: {parallelism: 2, template: {spec: {containers: [{name: c, image: busybox}]}}}}}
`))
		// The JobSet controller's Jobs own the pods; here the pods' owner is a Job owned by the JobSet.
		yes := true
		type podSpec struct{ job, rj, index string }
		pods := map[string]podSpec{"js-driver-0-0": {"js-driver-0", "driver", "0"},
			"js-workers-0-0": {"js-workers-0", "workers", "0"}, "js-workers-1-0": {"js-workers-1", "workers", "1"}}
		jobs := map[string]*unstructured.Unstructured{}
		for _, p := range pods {
			if jobs[p.job] != nil {
				continue
			}
			j := obj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: %s}
spec:
  suspend: true
  template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}
`, p.job))
			j.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet",
				Name: "js", UID: js.GetUID(), Controller: &yes}})
			jobs[p.job] = createObject(t, ctx, ns, j)
		}
		for name, p := range pods {
			createPods(t, ctx, ns, ownedPod(name, "", 0, jobs[p.job], map[string]string{
				"jobset.sigs.k8s.io/replicatedjob-name": p.rj, "jobset.sigs.k8s.io/job-index": p.index}))
		}
		for name, p := range pods {
			_, pg := podGroupOf(t, ctx, ns, name)
			if ownerOf(pg).Kind != "JobSet" || int64At(pg, "spec", "minSubGroup") != 2 {
				t.Errorf("%s: PodGroup owner %+v minSubGroup %d, want the JobSet and 2", name, ownerOf(pg), int64At(pg, "spec", "minSubGroup"))
			}
			sgs := subGroupsOf(pg)
			if fmt.Sprint(sgs["workers"]["minSubGroup"]) != "2" || sgs["workers-replica-1"]["parent"] != "workers" ||
				fmt.Sprint(sgs["workers-replica-1"]["minMember"]) != "2" || fmt.Sprint(sgs["driver-replica-0"]["minMember"]) != "1" {
				t.Errorf("sub-group tree %v", sgs)
			}
			subGroupLabel(t, ctx, ns, name, p.rj+"-replica-"+p.index)
		}
	})

	t.Run("LeaderWorkerSet", func(t *testing.T) {
		lws := createObject(t, ctx, ns, obj(t, `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: lws, labels: {kai.scheduler/queue: default-queue}}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 4
    workerTemplate: {spec: {containers: [{name: c, image: busybox}]}}
`))
		for i := 0; i < 4; i++ {
			name := fmt.Sprintf("lws-0-%d", i)
			createPods(t, ctx, ns, ownedPod(name, "", 0, lws, map[string]string{
				"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/worker-index": fmt.Sprint(i)}))
		}
		for i := 0; i < 4; i++ {
			name := fmt.Sprintf("lws-0-%d", i)
			_, pg := podGroupOf(t, ctx, ns, name)
			if pg.GetName() != "pg-lws-"+string(lws.GetUID())+"-group-0" || int64At(pg, "spec", "minMember") != 4 {
				t.Errorf("%s: PodGroup %s minMember %d, want the group-0 PodGroup of 4", name, pg.GetName(), int64At(pg, "spec", "minMember"))
			}
			want := "workers"
			if i == 0 {
				want = "leader"
			}
			subGroupLabel(t, ctx, ns, name, want)
		}
	})
}

// Bad input: an owner reference naming an object that does not exist leaves the pod ungrouped
// and a PodGrouperWarning event on it naming the owner; a pod with kai.scheduler/skip-podgrouper
// is left alone; the pod-grouper keeps going (a good pod created afterwards is grouped).
func TestPodGrouperBadInput(t *testing.T) {
	withoutControllers(t)
	ctx := ctxFor(t)
	ns := newNamespace(t, ctx, "pg-bad")
	cleanupPods(t, ns)
	startPodGrouper(t)
	ghost := &unstructured.Unstructured{}
	ghost.SetAPIVersion("batch/v1")
	ghost.SetKind("Job")
	ghost.SetName("ghost")
	ghost.SetUID(types.UID("00000000-0000-0000-0000-000000000001"))
	createPods(t, ctx, ns, ownedPod("orphan", "default-queue", 0, ghost, nil))
	skip := pendingPod("skipped", 0)
	skip.Annotations = map[string]string{"kai.scheduler/skip-podgrouper": "true"}
	createPods(t, ctx, ns, skip)
	err := harness.Poll(ctx, 30*time.Second, "PodGrouperWarning on orphan", func(ctx context.Context) (bool, error) {
		evs, err := admin.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "orphan" && e.Reason == "PodGrouperWarning" && strings.Contains(e.Message, "ghost") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Error(err)
	}
	createPods(t, ctx, ns, pendingPod("good", 0))
	podGroupOf(t, ctx, ns, "good")
	for _, name := range []string{"orphan", "skipped"} {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pg := p.Annotations["pod-group-name"]; pg != "" {
			t.Errorf("%s was grouped into %s", name, pg)
		}
	}
}

// Throughput of the pod-grouper (a benchmark: figures printed, not asserted; CTest
// perf.e2e.podgrouper, by hand): GANTRY_E2E_PG_JOBS batch/v1 Jobs of one pod each (the pod
// created by the test with the Job as owner, as the Job controller would) submitted at once,
// with the pod-grouper, scheduler and binder running on fake nodes with room for all. Prints the
// time until every PodGroup exists and until every pod is bound, and the CPU seconds of the
// pod-grouper beside kube-apiserver's. Asserts only that each pod ends in the PodGroup of its Job
// and bound. Skipped unless GANTRY_E2E_PG_JOBS is set.
func TestPodGrouperThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GANTRY_E2E_PG_JOBS"))
	if n <= 0 {
		t.Skip("GANTRY_E2E_PG_JOBS is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	cfg, err := env.Config("admin")
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	fast, err := harness.NewClients("admin", cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := suffix()
	nodes := (n + 199) / 200
	var specs []harness.GPUNode
	for i := 0; i < nodes; i++ {
		specs = append(specs, harness.GPUNode{Name: fmt.Sprintf("pg-perf-%s-%03d", id, i), GPUs: 8, Pods: 250})
	}
	exclusiveNodes(t, ctx, specs...)
	ns := newNamespace(t, ctx, "pg-perf")
	t.Cleanup(func() {
		zero := int64(0)
		fast.Kube.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	queue := "pg-perf-" + id
	createQueue(t, ctx, queue, 0)
	grouperProc := startPodGrouper(t)
	startScheduler(t, throughputClientLimits...)
	liveBinderWorkers(t, "binder-pg-perf.log", "", throughputClientLimits...)
	pids := controlPlanePids(t)
	pids["podgrouper"] = grouperProc.cmd.Process.Pid
	cpu0 := map[string]float64{}
	for name, pid := range pids {
		if cpu0[name], err = cpuSeconds(pid); err != nil {
			t.Fatal(err)
		}
	}
	// Let the processes finish starting (lists, leases) before the clock starts.
	time.Sleep(2 * time.Second)
	for name, pid := range pids {
		if cpu0[name], err = cpuSeconds(pid); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	jobUID := make([]types.UID, n)
	parallel(t, 64, n, func(i int) error {
		job := obj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: job-%05d, namespace: %s, labels: {kai.scheduler/queue: %s}}
spec:
  suspend: true
  template: {spec: {schedulerName: kai-scheduler, restartPolicy: Never, containers: [{name: c, image: busybox}]}}
`, i, ns, queue))
		res, err := fast.Resource(job)
		if err != nil {
			return err
		}
		got, err := res.Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		jobUID[i] = got.GetUID()
		_, err = fast.Kube.CoreV1().Pods(ns).Create(ctx, ownedPod(fmt.Sprintf("job-%05d-x", i), "", 0, got, nil), metav1.CreateOptions{})
		return err
	})
	submitted := time.Since(start)
	var grouped, bound time.Duration
	err = harness.Poll(ctx, 20*time.Minute, "all grouped and bound", func(ctx context.Context) (bool, error) {
		if grouped == 0 {
			pgs, err := fast.Dynamic.Resource(podGroupGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			if len(pgs.Items) >= n {
				grouped = time.Since(start)
			}
		}
		pods, err := fast.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		done := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				done++
			}
		}
		if done >= n && grouped != 0 {
			bound = time.Since(start)
			return true, nil
		}
		return false, nil
	})
	cpu := map[string]float64{}
	for name, pid := range pids {
		c, cerr := cpuSeconds(pid)
		if cerr != nil {
			t.Fatal(cerr)
		}
		cpu[name] = c - cpu0[name]
	}
	if err != nil {
		t.Fatalf("%v (after %s; grouped at %s)", err, time.Since(start).Round(time.Millisecond), grouped)
	}
	share := 0.0
	if cpu["kube-apiserver"] > 0 {
		share = 100 * cpu["podgrouper"] / cpu["kube-apiserver"]
	}
	t.Logf("%d one-pod Jobs: submitted in %s, all PodGroups in %s, all pods bound in %s; CPU s: pod-grouper %.2f, kube-apiserver %.2f (pod-grouper %.1f%% of kube-apiserver), etcd %.2f",
		n, submitted.Round(time.Millisecond), grouped.Round(time.Millisecond), bound.Round(time.Millisecond),
		cpu["podgrouper"], cpu["kube-apiserver"], share, cpu["etcd"])
	pods, err := fast.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		var i int
		fmt.Sscanf(p.Name, "job-%05d-x", &i)
		if want := fmt.Sprintf("pg-job-%05d-%s", i, jobUID[i]); p.Annotations["pod-group-name"] != want {
			t.Errorf("%s in PodGroup %q, want %s", p.Name, p.Annotations["pod-group-name"], want)
		}
	}
}

// withoutControllers skips a test that plays a controller's part by hand (its objects would be
// managed, or its ownerless pods collected, by a real controller manager).
func withoutControllers(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(env.Dir + "/env")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "KCM_PID=") {
		t.Skip("plays the controllers' part by hand; this control plane runs kube-controller-manager")
	}
}

// needsControllers skips the test unless this control plane runs kube-controller-manager
// (GANTRY_E2E_CONTROLLERS=1 run.sh up, as the CTest fixture e2e.kcm.up does).
func needsControllers(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(env.Dir + "/env")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "KCM_PID=") {
		t.Skip("needs kube-controller-manager (GANTRY_E2E_CONTROLLERS=1 run.sh up)")
	}
}

// With kube-controller-manager's job, replicaset, deployment and garbage-collector controllers
// creating and deleting the pods: a Job of parallelism 4 (batch-min-member 4) runs as one gang on
// 2 nodes x 2 GPUs; a Deployment scaled 1 -> 3 -> 1 has one PodGroup per pod; deleting the Job
// removes its PodGroup (garbage collection through the owner reference) and nothing else.
func TestPodGrouperWithControllers(t *testing.T) {
	needsControllers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "pg-kcm-a-" + id, GPUs: 2}, harness.GPUNode{Name: "pg-kcm-b-" + id, GPUs: 2})
	ns := newNamespace(t, ctx, "pg-kcm")
	cleanupPods(t, ns)
	queue := "kcm-" + id
	createQueue(t, ctx, queue, 0)
	startPodGrouper(t)
	startScheduler(t)
	liveBinder(t, "binder")

	job := createObject(t, ctx, ns, obj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata:
  name: gang
  labels: {kai.scheduler/queue: %s}
  annotations: {kai.scheduler/batch-min-member: "4"}
spec:
  parallelism: 4
  completions: 4
  template:
    spec:
      schedulerName: kai-scheduler
      restartPolicy: Never
      containers: [{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
`, queue)))
	var jobPods []string
	err := harness.Poll(ctx, 60*time.Second, "4 pods of the Job", func(ctx context.Context) (bool, error) {
		pods, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=gang"})
		if err != nil {
			return false, err
		}
		jobPods = nil
		for _, p := range pods.Items {
			jobPods = append(jobPods, p.Name)
		}
		return len(jobPods) == 4, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pgName := "pg-gang-" + string(job.GetUID())
	for _, name := range jobPods {
		_, pg := podGroupOf(t, ctx, ns, name)
		if pg.GetName() != pgName || int64At(pg, "spec", "minMember") != 4 {
			t.Errorf("%s in %s (minMember %d), want %s with 4", name, pg.GetName(), int64At(pg, "spec", "minMember"), pgName)
		}
	}
	waitBound(t, ctx, ns, jobPods...)

	// Deployment 1 -> 3 -> 1: one PodGroup per pod.
	deploy := createObject(t, ctx, ns, obj(t, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {kai.scheduler/queue: %s}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: kai-scheduler
      containers: [{name: main, image: busybox}]
`, queue)))
	scale := func(n int32) []string {
		t.Helper()
		patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
		if _, err := admin.Kube.AppsV1().Deployments(ns).Patch(ctx, deploy.GetName(), types.MergePatchType, patch,
			metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		var names []string
		err := harness.Poll(ctx, 60*time.Second, fmt.Sprintf("%d web pods", n), func(ctx context.Context) (bool, error) {
			pods, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err
			}
			names = nil
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					names = append(names, p.Name)
				}
			}
			return len(names) == int(n), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	for _, n := range []int32{1, 3, 1} {
		names := scale(n)
		groups := map[string]bool{}
		for _, name := range names {
			pod, pg := podGroupOf(t, ctx, ns, name)
			groups[pg.GetName()] = true
			if o := ownerOf(pg); o.Kind != "Pod" || o.UID != pod.UID {
				t.Errorf("%s: PodGroup owner %+v, want the pod", name, o)
			}
		}
		if len(groups) != int(n) {
			t.Errorf("%d web pods in %d PodGroups, want one each", n, len(groups))
		}
		waitBound(t, ctx, ns, names...)
	}

	// Deleting the Job: the garbage collector removes its pods and its PodGroup; the Deployment's
	// PodGroups stay.
	background := metav1.DeletePropagationBackground
	if err := admin.Kube.BatchV1().Jobs(ns).Delete(ctx, "gang", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	err = harness.Poll(ctx, 60*time.Second, "PodGroup "+pgName+" collected", func(ctx context.Context) (bool, error) {
		_, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, pgName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatal(err)
	}
	pgs, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pgs.Items) != 1 {
		var names []string
		for _, pg := range pgs.Items {
			names = append(names, pg.GetName())
		}
		t.Errorf("PodGroups left after deleting the Job: %v, want the one web pod's", names)
	}
}

// The same Job gang of 4 one-GPU pods (created by the Job controller) on a single 3-GPU node:
// none is bound, and the PodGroup the pod-grouper wrote carries the scheduler's reason.
func TestPodGrouperWithControllersGangDoesNotFit(t *testing.T) {
	needsControllers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "pg-kcm-small-" + id, GPUs: 3})
	ns := newNamespace(t, ctx, "pg-kcm-nofit")
	cleanupPods(t, ns)
	queue := "kcm-nofit-" + id
	createQueue(t, ctx, queue, 0)
	startPodGrouper(t)
	startScheduler(t)
	liveBinder(t, "binder")
	job := createObject(t, ctx, ns, obj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata:
  name: gang
  labels: {kai.scheduler/queue: %s}
  annotations: {kai.scheduler/batch-min-member: "4"}
spec:
  parallelism: 4
  completions: 4
  template:
    spec:
      schedulerName: kai-scheduler
      restartPolicy: Never
      containers: [{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
`, queue)))
	pgName := "pg-gang-" + string(job.GetUID())
	var msg string
	err := harness.Poll(ctx, 90*time.Second, "PodGroup "+pgName+" says why it does not fit", func(ctx context.Context) (bool, error) {
		pg, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, pgName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "schedulingConditions")
		for _, c := range conds {
			m := c.(map[string]interface{})
			if m["type"] == "UnschedulableOnNodePool" {
				msg, _ = m["message"].(string)
				return contains(msg, "Resources were found for 3 pods while 4 are required for gang scheduling"), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v; last message %q", err, msg)
	}
	t.Logf("PodGroup condition: %q", msg)
	pods, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			t.Errorf("%s bound to %s although the gang does not fit", p.Name, p.Spec.NodeName)
		}
	}
}
