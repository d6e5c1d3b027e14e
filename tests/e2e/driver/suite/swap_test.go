package suite

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"gantry/tests/e2e/driver/harness"
)

// The swap from a running KAI (README, "Switch from KAI"), on a control plane where Gantry is not
// installed (`GANTRY_E2E_DEPLOY=0 GANTRY_E2E_NODES=0 run.sh up DIR`, the CTest fixture
// e2e.swap.up): KAI's release objects (tests/data/kai-operator-v0.17/kai-release.yaml: the
// reservation namespace, its ServiceAccount and RoleBinding, the default queues, the
// PriorityClasses) and a workload KAI scheduled are there; Gantry's chart is installed the way the
// README says, as Helm would (it refuses an object that exists and belongs to another release);
// Gantry's scheduler and binder run with the chart's arguments. New work is scheduled by Gantry,
// KAI's running pod is counted and kept, none of KAI's objects is changed; then the rollback
// (`helm uninstall`) leaves KAI's objects and every workload as they were.

const (
	swapRelease   = "gantry"
	swapNamespace = harness.Namespace // the README's --namespace gantry-system
)

// helmCollisions lists the rendered objects Helm would refuse to install: they exist and are not
// the release's (its meta.helm.sh/release-name annotation names another release, or none).
func helmCollisions(t *testing.T, ctx context.Context, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		ri, err := admin.Resource(o)
		if err != nil {
			t.Fatal(err)
		}
		live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if live.GetAnnotations()["meta.helm.sh/release-name"] != swapRelease {
			out = append(out, objKey(o))
		}
	}
	sort.Strings(out)
	return out
}

// content is what a KAI object says, less what the API server keeps about it (resourceVersion,
// managedFields, ...) and its status (Gantry's scheduler writes Queue status, as KAI's does).
func content(o *unstructured.Unstructured) map[string]interface{} {
	c := o.DeepCopy().Object
	delete(c, "status")
	c["metadata"] = map[string]interface{}{"name": o.GetName(), "namespace": o.GetNamespace(),
		"labels": o.GetLabels(), "annotations": o.GetAnnotations(), "uid": string(o.GetUID())}
	return normalize(c).(map[string]interface{})
}

// swapProcess starts `gantry VERB args...` until the test ends (SIGTERM, exit 0 expected).
func swapProcess(t *testing.T, bin, verb string, args []string) *gantryProcess {
	t.Helper()
	return startGantryBin(t, bin, verb, append([]string{verb}, args...)...)
}

// containerArgs returns the arguments of the rendered Deployment's container.
func containerArgs(t *testing.T, objs []*unstructured.Unstructured, deployment string) []string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != deployment {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		var args []string
		for _, a := range containers[0].(map[string]interface{})["args"].([]interface{}) {
			args = append(args, a.(string))
		}
		return args
	}
	t.Fatalf("the chart renders no Deployment %s", deployment)
	return nil
}

func TestSwapFromKAI(t *testing.T) {
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := admin.Kube.CoreV1().Namespaces().Get(ctx, swapNamespace, metav1.GetOptions{}); err == nil {
		t.Skipf("needs a control plane without Gantry installed (GANTRY_E2E_DEPLOY=0 run.sh up); %s exists", swapNamespace)
	}
	node := "swap-node"
	exclusiveNodes(t, ctx, harness.GPUNode{Name: node, GPUs: 2})

	// 1. KAI is installed: its release's objects, and a job it scheduled, running.
	kai, err := env.ReadManifests("tests/data/kai-operator-v0.17/kai-release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range kai {
		ri, err := admin.Resource(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ri.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create KAI's %s: %v", objKey(o), err)
		}
	}
	kaiContent := func() map[string]map[string]interface{} {
		out := map[string]map[string]interface{}{}
		for _, o := range kai {
			ri, _ := admin.Resource(o)
			live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Errorf("KAI's %s: %v", objKey(o), err)
				continue
			}
			out[objKey(o)] = content(live)
		}
		return out
	}
	kaiBefore := kaiContent()

	ns := newNamespace(t, ctx, "team")
	rec := newRecorder(t, ctx, admin.Kube, ns)
	cleanupPods(t, ns)
	// A bare pod in KAI's default queue, grouped by KAI's pod-grouper (a PodGroup owned by the
	// pod) and bound by KAI's binder.
	running := pendingPod("train-0", 1)
	running.Annotations = map[string]string{"pod-group-name": "pg-train-0"}
	created, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, running, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg := obj(t, `
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: pg-train-0
  labels: {kai.scheduler/queue: default-queue}
spec: {minMember: 1, queue: default-queue, priorityClassName: train}
`)
	pg.SetNamespace(ns)
	pg.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: created.Name, UID: created.UID}})
	kaiPG, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = admin.Kube.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: created.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, ns, []string{created.Name})

	// 2. Install Gantry's chart as the README says. With its default values Helm would refuse:
	// the objects KAI's release owns.
	gantryNS := swapNamespace
	wantCollisions := []string{
		"Namespace /kai-resource-reservation",
		"PriorityClass /build", "PriorityClass /build-preemptible", "PriorityClass /inference", "PriorityClass /train",
		"Queue /default-parent-queue", "Queue /default-queue",
		"RoleBinding kai-resource-reservation/kai-resource-reservation",
		"ServiceAccount kai-resource-reservation/kai-resource-reservation",
	}
	if got := helmCollisions(t, ctx, render(t, gantryNS, nil)); !equalJSON(got, wantCollisions) {
		t.Errorf("with the chart's default values Helm would refuse %v, want %v", got, wantCollisions)
	}
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "deploy", "helm", "swap-from-kai.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]interface{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	release := render(t, gantryNS, values)
	if got := helmCollisions(t, ctx, release); len(got) != 0 {
		t.Fatalf("with deploy/helm/swap-from-kai.yaml Helm would still refuse %v", got)
	}
	// helm install --create-namespace: the namespace, then every object with the release's
	// ownership metadata.
	if _, err := admin.Kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gantryNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, o := range release {
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["app.kubernetes.io/managed-by"] = "Helm"
		o.SetLabels(labels)
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["meta.helm.sh/release-name"], ann["meta.helm.sh/release-namespace"] = swapRelease, gantryNS
		o.SetAnnotations(ann)
		ri, err := admin.Resource(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ri.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("install %s: %v", objKey(o), err)
		}
	}
	// The test's users act as the chart's ServiceAccounts (same bindings: TestHelmChartMatchesPlainManifests).
	if _, err := env.BindUsers(ctx, admin); err != nil {
		t.Fatal(err)
	}

	// 3. Gantry's scheduler and binder with the chart's arguments (the configuration file and the
	// listen address adapted to processes on this machine).
	var config string
	for _, o := range release {
		if o.GetKind() == "ConfigMap" && o.GetName() == "gantry-scheduler-config" {
			config, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
		}
	}
	configFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	schedArgs := adapt(t, containerArgs(t, release, "gantry-scheduler"), map[string]string{"--config": configFile})
	scheduler := swapProcess(t, bin, "scheduler", append(schedArgs,
		"--kubeconfig", env.Kubeconfig(harness.SchedulerUser), "--metrics-address", "127.0.0.1:0",
		"--plugin-server-port", "0"))
	binderArgs := containerArgs(t, release, "gantry-binder")
	binderProc := swapProcess(t, bin, "binder", append(binderArgs,
		"--kubeconfig", env.Kubeconfig(harness.BinderUser), "--metrics-address", "127.0.0.1:0"))

	// 4. A new job is scheduled and bound by Gantry, next to KAI's running pod.
	fresh := createGang(t, ctx, ns, "fresh", "default-queue", 1, 1, 1)
	err = harness.Poll(ctx, 90*time.Second, fresh[0]+" bound by Gantry", func(ctx context.Context) (bool, error) {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, fresh[0], metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			return false, err
		}
		for _, h := range rec.requestsFor(fresh[0]) {
			if h.reached("Succeeded") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The node's second GPU is KAI's pod's: a further one-GPU job does not fit, and Gantry says so.
	over := createGang(t, ctx, ns, "over", "default-queue", 1, 1, 1)
	err = harness.Poll(ctx, 60*time.Second, over[0]+" found unschedulable", func(ctx context.Context) (bool, error) {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, over[0], metav1.GetOptions{})
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
		t.Fatal(err)
	}
	if p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, over[0], metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("%s, which does not fit, is on node %q (%v)", over[0], p.Spec.NodeName, err)
	}
	time.Sleep(2 * time.Second) // a few more cycles with everything in place
	if err := harness.Poll(ctx, 10*time.Second, "KAI's pod kept", func(ctx context.Context) (bool, error) {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		return err == nil && p.UID == created.UID && p.Spec.NodeName == node && p.DeletionTimestamp == nil, err
	}); err != nil {
		t.Errorf("KAI's running pod: %v", err)
	}
	rec.mu.Lock()
	trainNodes, trainGone := append([]string{}, rec.podNodes[created.Name]...), rec.podGone[created.Name]
	rec.mu.Unlock()
	if trainGone {
		t.Errorf("KAI's running pod %s was deleted", created.Name)
	}
	if !equalJSON(trainNodes, []string{node}) {
		t.Errorf("KAI's running pod was on nodes %v, want only %s", trainNodes, node)
	}
	if brs := rec.requestsFor(created.Name); len(brs) != 0 {
		t.Errorf("Gantry wrote %d BindRequests for KAI's running pod", len(brs))
	}
	if pg, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Get(ctx, kaiPG.GetName(), metav1.GetOptions{}); err != nil ||
		pg.GetUID() != kaiPG.GetUID() {
		t.Errorf("KAI's PodGroup %s replaced or gone: %v", kaiPG.GetName(), err)
	}
	if after := kaiContent(); !equalJSON(after, kaiBefore) {
		t.Errorf("installing Gantry changed KAI's objects\nbefore: %s\nafter: %s", toJSON(kaiBefore), toJSON(after))
	}

	// 5. The rollback: Gantry stops and `helm uninstall gantry` deletes its release (Helm keeps
	// CRDs); KAI's objects and every workload stay.
	scheduler.stop(t)
	binderProc.stop(t)
	for i := len(release) - 1; i >= 0; i-- {
		o := release[i]
		ri, _ := admin.Resource(o)
		if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("uninstall %s: %v", objKey(o), err)
		}
	}
	if after := kaiContent(); !equalJSON(after, kaiBefore) {
		t.Errorf("uninstalling Gantry changed KAI's objects\nbefore: %s\nafter: %s", toJSON(kaiBefore), toJSON(after))
	}
	for _, name := range []string{created.Name, fresh[0]} {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != node || p.Status.Phase != corev1.PodRunning {
			t.Errorf("after the rollback pod %s: %v", name, err)
		}
	}
	pgs, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("after the rollback: PodGroups: %v", err)
	} else if len(pgs.Items) != 3 {
		t.Errorf("after the rollback: %d PodGroups, want 3 (KAI's job's and the two new jobs')", len(pgs.Items))
	}
	var left []string
	for _, o := range release {
		ri, _ := admin.Resource(o)
		if _, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{}); err == nil {
			left = append(left, objKey(o))
		}
	}
	if len(left) != 0 {
		t.Errorf("objects of Gantry's release left after uninstall: %s", strings.Join(left, ", "))
	}
}
