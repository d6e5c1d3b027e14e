package suite

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"gantry/tests/e2e/driver/harness"
)

// check is one authorization question: may the user do verb on group/resource[/subresource]
// (in namespace, on name)?
type check struct {
	verb, group, resource, sub, ns, name string
	allowed                              bool
}

func (c check) String() string {
	r := c.resource
	if c.sub != "" {
		r += "/" + c.sub
	}
	if c.group != "" {
		r += "." + c.group
	}
	where := "cluster"
	if c.ns != "" {
		where = "ns " + c.ns
	}
	if c.name != "" {
		where += " name " + c.name
	}
	return fmt.Sprintf("%s %s (%s)", c.verb, r, where)
}

func allow(verb, group, resource, sub, ns string) check {
	return check{verb, group, resource, sub, ns, "", true}
}
func deny(verb, group, resource, sub, ns string) check {
	return check{verb, group, resource, sub, ns, "", false}
}

// accessReview asks the API server, as the user, whether each check is allowed.
func accessReview(t *testing.T, ctx context.Context, c *harness.Clients, checks []check) {
	t.Helper()
	for _, ch := range checks {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: ch.verb, Group: ch.group,
				Resource: ch.resource, Subresource: ch.sub, Namespace: ch.ns, Name: ch.name}}}
		got, err := c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: access review: %v", c.User, err)
		}
		if got.Status.Allowed != ch.allowed {
			t.Errorf("%s may %s: %v, want %v", c.User, ch, got.Status.Allowed, ch.allowed)
		}
	}
}

const workNS = "team-a" // any workload namespace: the component roles are cluster-wide

// Everything deploy/rbac grants the scheduler, and a sample of what it must not have.
func TestRBACSchedulerAccessReview(t *testing.T) {
	ctx := ctxFor(t)
	ns := harness.Namespace
	checks := []check{
		allow("list", "", "pods", "", ""), allow("watch", "", "pods", "", ""), allow("get", "", "pods", "", workNS),
		allow("delete", "", "pods", "", workNS), allow("patch", "", "pods", "status", workNS),
		allow("list", "", "nodes", "", ""), allow("watch", "", "namespaces", "", ""),
		allow("list", "scheduling.run.ai", "queues", "", ""), allow("patch", "scheduling.run.ai", "queues", "status", ""),
		allow("watch", "scheduling.run.ai", "podgroups", "", ""), allow("patch", "scheduling.run.ai", "podgroups", "status", workNS),
		allow("patch", "scheduling.run.ai", "podgroups", "", workNS), // KAI's timestamp annotations
		allow("list", "scheduling.run.ai", "bindrequests", "", ""), allow("create", "scheduling.run.ai", "bindrequests", "", workNS),
		allow("delete", "scheduling.run.ai", "bindrequests", "", workNS), // stale ones, as KAI's scheduler
		allow("list", "scheduling.k8s.io", "priorityclasses", "", ""), allow("watch", "kai.scheduler", "topologies", "", ""),
		allow("list", "resource.k8s.io", "resourceclaims", "", ""), allow("watch", "resource.k8s.io", "resourceslices", "", ""),
		allow("get", "resource.k8s.io", "deviceclasses", "", ""),
		allow("list", "topology.node.k8s.io", "noderesourcetopologies", "", ""),
		allow("watch", "topology.node.k8s.io", "noderesourcetopologies", "", ""),
		// ConfigMap names, for KAI's ConfigMap predicate (read only).
		allow("list", "", "configmaps", "", ""), allow("watch", "", "configmaps", "", ""),
		allow("create", "", "events", "", workNS), allow("patch", "events.k8s.io", "events", "", workNS),
		allow("create", "coordination.k8s.io", "leases", "", ns),
		{"update", "coordination.k8s.io", "leases", "", ns, "gantry-scheduler", true},
		{"update", "coordination.k8s.io", "leases", "", ns, "gantry-binder", false},
		{"get", "coordination.k8s.io", "leases", "", workNS, "gantry-scheduler", false},

		deny("create", "", "pods", "binding", workNS), deny("create", "", "pods", "", workNS),
		deny("update", "", "pods", "", workNS), allow("patch", "", "pods", "", workNS), // a shard's pool label
		deny("update", "", "pods", "status", workNS), deny("create", "", "pods", "eviction", workNS),
		deny("get", "", "secrets", "", workNS), deny("update", "", "secrets", "", workNS), deny("update", "", "configmaps", "", ns),
		deny("create", "", "configmaps", "", workNS), deny("delete", "", "configmaps", "", workNS),
		deny("update", "", "nodes", "", ""), deny("patch", "", "nodes", "status", ""), deny("delete", "", "namespaces", "", ""),
		deny("create", "scheduling.run.ai", "queues", "", ""), deny("update", "scheduling.run.ai", "queues", "", ""),
		deny("update", "scheduling.run.ai", "podgroups", "", workNS), deny("delete", "scheduling.run.ai", "podgroups", "", workNS),
		deny("create", "scheduling.run.ai", "podgroups", "", workNS), deny("update", "scheduling.run.ai", "bindrequests", "", workNS),
		deny("update", "scheduling.run.ai", "bindrequests", "status", workNS),
		deny("create", "kai.scheduler", "topologies", "", ""), deny("update", "resource.k8s.io", "resourceclaims", "status", workNS),
		deny("create", "scheduling.k8s.io", "priorityclasses", "", ""), deny("list", "coordination.k8s.io", "leases", "", ns),
		deny("update", "topology.node.k8s.io", "noderesourcetopologies", "", ""),
		deny("create", "rbac.authorization.k8s.io", "clusterrolebindings", "", ""),
		deny("create", "apps", "deployments", "", workNS),
	}
	accessReview(t, ctx, sched, checks)
}

// Everything deploy/rbac grants the binder, and a sample of what it must not have.
func TestRBACBinderAccessReview(t *testing.T) {
	ctx := ctxFor(t)
	ns := harness.Namespace
	checks := []check{
		allow("list", "scheduling.run.ai", "bindrequests", "", ""), allow("watch", "scheduling.run.ai", "bindrequests", "", ""),
		allow("update", "scheduling.run.ai", "bindrequests", "status", workNS), allow("patch", "scheduling.run.ai", "bindrequests", "status", workNS),
		allow("get", "", "pods", "", workNS), allow("watch", "", "pods", "", ""), allow("list", "", "nodes", "", ""),
		allow("create", "", "pods", "binding", workNS), allow("patch", "", "pods", "status", workNS),
		allow("create", "", "events", "", workNS), allow("create", "events.k8s.io", "events", "", workNS),
		allow("get", "resource.k8s.io", "resourceclaims", "", workNS), allow("update", "resource.k8s.io", "resourceclaims", "status", workNS),
		allow("patch", "resource.k8s.io", "resourceclaims", "status", workNS),
		// The claims of DRA-backed extended resources (KEP-5004) are the binder's to make and undo.
		allow("create", "resource.k8s.io", "resourceclaims", "", workNS),
		allow("delete", "resource.k8s.io", "resourceclaims", "", workNS),
		allow("create", "coordination.k8s.io", "leases", "", ns),
		{"get", "coordination.k8s.io", "leases", "", ns, "gantry-binder", true},
		{"update", "coordination.k8s.io", "leases", "", ns, "gantry-scheduler", false},

		deny("create", "scheduling.run.ai", "bindrequests", "", workNS), deny("update", "scheduling.run.ai", "bindrequests", "", workNS),
		deny("delete", "scheduling.run.ai", "bindrequests", "", workNS),
		deny("delete", "", "pods", "", workNS), deny("create", "", "pods", "", workNS), deny("update", "", "pods", "", workNS),
		deny("update", "", "pods", "status", workNS), deny("create", "", "pods", "eviction", workNS),
		deny("get", "", "secrets", "", workNS), deny("update", "", "secrets", "", workNS),
		deny("update", "", "nodes", "", ""), deny("list", "", "namespaces", "", ""),
		deny("list", "scheduling.run.ai", "queues", "", ""), deny("patch", "scheduling.run.ai", "podgroups", "status", workNS),
		deny("patch", "scheduling.run.ai", "podgroups", "", workNS),
		deny("list", "resource.k8s.io", "resourceslices", "", ""), deny("update", "resource.k8s.io", "resourceclaims", "", workNS),
		deny("list", "scheduling.k8s.io", "priorityclasses", "", ""), deny("list", "kai.scheduler", "topologies", "", ""),
	}
	accessReview(t, ctx, binder, checks)
}

// Everything deploy/rbac grants the pod-grouper, and a sample of what it must not have.
func TestRBACPodGrouperAccessReview(t *testing.T) {
	ctx := ctxFor(t)
	ns := harness.Namespace
	checks := []check{
		allow("watch", "", "pods", "", ""), allow("patch", "", "pods", "", workNS),
		allow("create", "scheduling.run.ai", "podgroups", "", workNS), allow("update", "scheduling.run.ai", "podgroups", "", workNS),
		allow("get", "scheduling.run.ai", "podgroups", "", workNS), allow("create", "", "events", "", workNS),
		allow("list", "scheduling.k8s.io", "priorityclasses", "", ""), allow("get", "", "configmaps", "", workNS),
		allow("watch", "apps", "replicasets", "", ""), allow("watch", "batch", "jobs", "", ""),
		allow("get", "kubeflow.org", "pytorchjobs", "", workNS), allow("get", "ray.io", "rayclusters", "", workNS),
		allow("get", "jobset.x-k8s.io", "jobsets", "", workNS), allow("get", "leaderworkerset.x-k8s.io", "leaderworkersets", "", workNS),
		allow("create", "coordination.k8s.io", "leases", "", ns),
		{"update", "coordination.k8s.io", "leases", "", ns, "gantry-podgrouper", true},
		{"update", "coordination.k8s.io", "leases", "", ns, "gantry-scheduler", false},

		deny("create", "", "pods", "binding", workNS), deny("delete", "", "pods", "", workNS),
		deny("create", "", "pods", "", workNS), deny("update", "", "pods", "status", workNS),
		deny("delete", "scheduling.run.ai", "podgroups", "", workNS), deny("patch", "scheduling.run.ai", "podgroups", "status", workNS),
		deny("create", "scheduling.run.ai", "bindrequests", "", workNS), deny("list", "", "configmaps", "", workNS),
		deny("get", "", "secrets", "", workNS), deny("update", "kubeflow.org", "pytorchjobs", "", workNS),
		deny("list", "kubeflow.org", "pytorchjobs", "", workNS), deny("delete", "batch", "jobs", "", workNS),
		deny("update", "scheduling.run.ai", "queues", "", ""),
	}
	accessReview(t, ctx, grouper, checks)
}

func TestRBACStatusControllersAccessReview(t *testing.T) {
	ctx := ctxFor(t)
	ns := harness.Namespace
	pgc := mustClients(harness.PodGroupControllerUser)
	accessReview(t, ctx, pgc, []check{
		allow("watch", "", "pods", "", ""), allow("watch", "", "nodes", "", ""),
		allow("watch", "scheduling.k8s.io", "priorityclasses", "", ""),
		allow("watch", "scheduling.run.ai", "podgroups", "", ""),
		allow("update", "scheduling.run.ai", "podgroups", "status", workNS),
		allow("create", "coordination.k8s.io", "leases", "", ns),
		{"update", "coordination.k8s.io", "leases", "", ns, "gantry-podgroup-controller", true},
		{"update", "coordination.k8s.io", "leases", "", ns, "gantry-podgrouper", false},
		deny("update", "scheduling.run.ai", "podgroups", "", workNS), deny("patch", "", "pods", "", workNS),
		deny("update", "scheduling.run.ai", "queues", "status", ""), deny("create", "", "pods", "binding", workNS),
	})
	qc := mustClients(harness.QueueControllerUser)
	accessReview(t, ctx, qc, []check{
		allow("watch", "scheduling.run.ai", "queues", "", ""), allow("watch", "scheduling.run.ai", "podgroups", "", ""),
		allow("update", "scheduling.run.ai", "queues", "status", ""),
		allow("create", "coordination.k8s.io", "leases", "", ns),
		{"update", "coordination.k8s.io", "leases", "", ns, "gantry-queue-controller", true},
		deny("update", "scheduling.run.ai", "queues", "", ""), deny("delete", "scheduling.run.ai", "queues", "", ""),
		deny("update", "scheduling.run.ai", "podgroups", "status", workNS), deny("list", "", "pods", "", ""),
	})
}

// The same permissions through real API calls: what each component does succeeds, what belongs
// to the other component (or to nobody) is refused with 403.
func TestRBACRealCalls(t *testing.T) {
	ctx := ctxFor(t)
	ns := newNamespace(t, ctx, "rbac")
	pods := admin.Kube.CoreV1().Pods(ns)
	for _, name := range []string{"evict-me", "bind-me", "keep-me"} {
		if _, err := pods.Create(ctx, pendingPod(name, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret, err := admin.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "credentials"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg := obj(t, examplePodGroup)
	pg.SetNamespace(ns)
	if _, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := func(pod string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod},
			Target: corev1.ObjectReference{Kind: "Node", Name: "gpu-node-0"}}
	}
	expectOK := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	expectForbidden := func(what string, err error) {
		t.Helper()
		if !harness.IsForbidden(err) {
			t.Errorf("%s: want 403 Forbidden, got %v", what, err)
		}
	}

	// The scheduler.
	br := obj(t, exampleBindRequest)
	br.SetNamespace(ns)
	br.SetName("bind-me")
	unstructuredSet(br, "bind-me", "spec", "podName")
	_, err = sched.Dynamic.Resource(bindRequestGVR).Namespace(ns).Create(ctx, br, metav1.CreateOptions{})
	expectOK("scheduler creates a BindRequest", err)
	expectOK("scheduler deletes (evicts) a pod",
		sched.Kube.CoreV1().Pods(ns).Delete(ctx, "evict-me", metav1.DeleteOptions{}))
	_, err = sched.Kube.CoreV1().Pods(ns).Patch(ctx, "keep-me", types.StrategicMergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"waiting for 1 GPU"}]}}`),
		metav1.PatchOptions{}, "status")
	expectOK("scheduler patches a pod condition", err)
	_, err = sched.Dynamic.Resource(podGroupGVR).Namespace(ns).Patch(ctx, "train-llm", types.MergePatchType,
		[]byte(`{"status":{"phase":"Pending","pending":4}}`), metav1.PatchOptions{}, "status")
	expectOK("scheduler patches PodGroup status", err)
	_, err = sched.Dynamic.Resource(queueGVR).Patch(ctx, "default-queue", types.MergePatchType,
		[]byte(`{"status":{"requested":{"nvidia.com/gpu":"1"}}}`), metav1.PatchOptions{}, "status")
	expectOK("scheduler patches Queue status", err)
	_, err = sched.Kube.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "keep-me.unschedulable"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "keep-me"},
		Reason:         "Unschedulable", Message: "waiting for 1 GPU", Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "kai-scheduler"}}, metav1.CreateOptions{})
	expectOK("scheduler creates an event", err)
	// (Leftover from an earlier run against the same control plane: start without it.)
	admin.Kube.CoordinationV1().Leases(harness.Namespace).Delete(ctx, "gantry-scheduler", metav1.DeleteOptions{})
	_, err = sched.Kube.CoordinationV1().Leases(harness.Namespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "gantry-scheduler"}}, metav1.CreateOptions{})
	expectOK("scheduler creates its leader-election lease", err)
	expectForbidden("scheduler binds a pod", sched.Kube.CoreV1().Pods(ns).Bind(ctx, binding("keep-me"), metav1.CreateOptions{}))
	secret.StringData = map[string]string{"k": "stolen"}
	_, err = sched.Kube.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{})
	expectForbidden("scheduler updates a Secret", err)
	_, err = sched.Kube.CoreV1().Pods(ns).Create(ctx, pendingPod("sneaky", 0), metav1.CreateOptions{})
	expectForbidden("scheduler creates a pod", err)
	// KAI's timestamp annotations: the scheduler patches PodGroups (RBAC cannot narrow a patch to
	// the annotations), but may neither replace nor delete one.
	_, err = sched.Dynamic.Resource(podGroupGVR).Namespace(ns).Patch(ctx, "train-llm", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"kai.scheduler/last-start-timestamp":"2026-11-30T12:00:00Z"}}}`), metav1.PatchOptions{})
	expectOK("scheduler annotates a PodGroup", err)
	pgObj, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, "train-llm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sched.Dynamic.Resource(podGroupGVR).Namespace(ns).Update(ctx, pgObj, metav1.UpdateOptions{})
	expectForbidden("scheduler replaces a PodGroup", err)
	expectForbidden("scheduler deletes a PodGroup",
		sched.Dynamic.Resource(podGroupGVR).Namespace(ns).Delete(ctx, "train-llm", metav1.DeleteOptions{}))

	// The binder.
	expectOK("binder binds a pod", binder.Kube.CoreV1().Pods(ns).Bind(ctx, binding("bind-me"), metav1.CreateOptions{}))
	if p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, "bind-me", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "gpu-node-0" {
		t.Errorf("after the binder's binding the pod is on %q (%v)", p.Spec.NodeName, err)
	}
	stored, err := binder.Dynamic.Resource(bindRequestGVR).Namespace(ns).Get(ctx, "bind-me", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("binder reads the BindRequest: %v", err)
	}
	stored.Object["status"] = map[string]interface{}{"phase": "Succeeded", "reason": "bound"}
	_, err = binder.Dynamic.Resource(bindRequestGVR).Namespace(ns).UpdateStatus(ctx, stored, metav1.UpdateOptions{})
	expectOK("binder updates BindRequest status", err)
	stored, _ = admin.Dynamic.Resource(bindRequestGVR).Namespace(ns).Get(ctx, "bind-me", metav1.GetOptions{})
	if phase, _, _ := unstructuredString(stored, "status", "phase"); phase != "Succeeded" {
		t.Errorf("BindRequest phase after the binder's update: %q", phase)
	}
	stored.Object["spec"].(map[string]interface{})["selectedNode"] = "gpu-node-1"
	_, err = binder.Dynamic.Resource(bindRequestGVR).Namespace(ns).Update(ctx, stored, metav1.UpdateOptions{})
	expectForbidden("binder changes a BindRequest spec", err)
	expectForbidden("binder deletes a pod", binder.Kube.CoreV1().Pods(ns).Delete(ctx, "keep-me", metav1.DeleteOptions{}))
	other := obj(t, exampleBindRequest)
	other.SetNamespace(ns)
	other.SetName("forged")
	_, err = binder.Dynamic.Resource(bindRequestGVR).Namespace(ns).Create(ctx, other, metav1.CreateOptions{})
	expectForbidden("binder creates a BindRequest", err)
	_, err = binder.Kube.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{})
	expectForbidden("binder updates a Secret", err)
}
