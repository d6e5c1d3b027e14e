package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"gantry/tests/e2e/driver/harness"
)

// What KAI's API types declare for each CRD: group, version, scope, short names, whether status
// is a subresource, and printer columns.
var wantCRDs = []struct {
	name, group, version, kind string
	scope                      apiextensionsv1.ResourceScope
	shortNames                 []string
	status                     bool
	columns                    []string
}{
	{"queues.scheduling.run.ai", "scheduling.run.ai", "v2", "Queue", apiextensionsv1.ClusterScoped, nil, true,
		[]string{"Priority", "Parent", "Children", "DisplayName"}},
	{"podgroups.scheduling.run.ai", "scheduling.run.ai", "v2alpha2", "PodGroup", apiextensionsv1.NamespaceScoped, []string{"pg"}, true, nil},
	{"bindrequests.scheduling.run.ai", "scheduling.run.ai", "v1alpha2", "BindRequest", apiextensionsv1.NamespaceScoped, nil, true, nil},
	{"topologies.kai.scheduler", "kai.scheduler", "v1alpha1", "Topology", apiextensionsv1.ClusterScoped, nil, false, nil},
}

func TestCRDsEstablished(t *testing.T) {
	ctx := ctxFor(t)
	for _, want := range wantCRDs {
		if err := harness.WaitCRDEstablished(ctx, admin, want.name, 5*time.Second); err != nil {
			t.Errorf("%s: %v", want.name, err)
			continue
		}
		crd, err := harness.CRD(ctx, admin, want.name)
		if err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Group != want.group || crd.Spec.Scope != want.scope || crd.Spec.Names.Kind != want.kind {
			t.Errorf("%s: group %q scope %q kind %q", want.name, crd.Spec.Group, crd.Spec.Scope, crd.Spec.Names.Kind)
		}
		if fmt.Sprint(crd.Spec.Names.ShortNames) != fmt.Sprint(want.shortNames) {
			t.Errorf("%s: short names %v, want %v", want.name, crd.Spec.Names.ShortNames, want.shortNames)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != want.version ||
			!crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage {
			t.Errorf("%s: versions %+v, want only %s (served, storage)", want.name, crd.Spec.Versions, want.version)
			continue
		}
		v := crd.Spec.Versions[0]
		hasStatus := v.Subresources != nil && v.Subresources.Status != nil
		if hasStatus != want.status {
			t.Errorf("%s: status subresource %v, want %v", want.name, hasStatus, want.status)
		}
		var cols []string
		for _, c := range v.AdditionalPrinterColumns {
			cols = append(cols, c.Name)
		}
		if fmt.Sprint(cols) != fmt.Sprint(want.columns) {
			t.Errorf("%s: printer columns %v, want %v", want.name, cols, want.columns)
		}
	}
	// Discovery serves the short name, so `kubectl get pg` works.
	list, err := admin.Kube.Discovery().ServerResourcesForGroupVersion("scheduling.run.ai/v2alpha2")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range list.APIResources {
		if r.Name == "podgroups" {
			found = fmt.Sprint(r.ShortNames) == "[pg]" && r.Namespaced
		}
	}
	if !found {
		t.Errorf("discovery: podgroups with short name pg not served: %+v", list.APIResources)
	}
}

const exampleQueue = `
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: research-%s
spec:
  displayName: Research
  parentQueue: default-parent-queue
  priority: 150
  preemptMinRuntime: 10m
  reclaimMinRuntime: 30m
  resources:
    gpu: {quota: 8, limit: 16, overQuotaWeight: 2}
    cpu: {quota: 64000, limit: -1, overQuotaWeight: 1}
    memory: {quota: 256000, limit: -1, overQuotaWeight: 0.5}
`

const examplePodGroup = `
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: train-llm
spec:
  minMember: 4
  queue: default-queue
  priorityClassName: train
  preemptibility: non-preemptible
  parallelism: 4
  completions: 4
  backoffLimit: 3
  markUnschedulable: true
  schedulingBackoff: 1
  topologyConstraint:
    topology: cluster-layout
    requiredTopologyLevel: topology.kubernetes.io/zone
    preferredTopologyLevel: example.com/rack
  subGroups:
  - name: workers
    minMember: 3
    topologyConstraint: {topology: cluster-layout, requiredTopologyLevel: example.com/rack}
  - name: leader
    minMember: 1
    parent: workers
`

const exampleBindRequest = `
apiVersion: scheduling.run.ai/v1alpha2
kind: BindRequest
metadata:
  name: train-llm-0
spec:
  podName: train-llm-0
  selectedNode: gpu-node-0
  receivedResourceType: Fraction
  receivedGPU: {count: 1, portion: "0.5"}
  selectedGPUGroups: [5d1c7f3e-gpu-group]
  backoffLimit: 5
  resourceClaimAllocations:
  - name: gpu-claim
    allocation:
      devices:
        results:
        - {request: gpu, driver: gpu.example.com, pool: gpu-node-0, device: gpu-3, adminAccess: false,
           tolerations: [{key: maintenance, operator: Exists, effect: NoSchedule}],
           consumedCapacity: {memory: 40Gi}}
        config:
        - source: FromClaim
          requests: [gpu]
          opaque: {driver: gpu.example.com, parameters: {sharing: {strategy: TimeSlicing}}}
      nodeSelector:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [gpu-node-0]}]
      allocationTimestamp: "2025-06-01T10:00:00Z"
  extendedResourceClaimAllocation:
    allocation:
      devices:
        results:
        - {request: container-0-request-1, driver: accel.example.com, pool: gpu-node-0, device: accel-1}
      nodeSelector:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [gpu-node-0]}]
    deviceRequests:
    - name: container-0-request-1
      exactly: {deviceClassName: accel, allocationMode: ExactCount, count: 1}
    containerMappings:
    - {containerName: main, resourceName: example.com/accel, requestName: container-0-request-1}
`

const exampleTopology = `
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata:
  name: cluster-layout-%s
spec:
  levels:
  - nodeLabel: topology.kubernetes.io/zone
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
`

// Objects shaped like KAI's examples are accepted and every field survives (a field missing from
// a schema would be pruned and the read-back spec would differ).
func TestCRDsAcceptKAIObjects(t *testing.T) {
	ctx := ctxFor(t)
	ns := newNamespace(t, ctx, "crds")
	id := suffix()
	cases := []struct {
		name string
		ri   dynamic.ResourceInterface
		obj  *unstructured.Unstructured
	}{
		{"Queue", admin.Dynamic.Resource(queueGVR), obj(t, fmt.Sprintf(exampleQueue, id))},
		{"PodGroup", admin.Dynamic.Resource(podGroupGVR).Namespace(ns), obj(t, examplePodGroup)},
		{"BindRequest", admin.Dynamic.Resource(bindRequestGVR).Namespace(ns), obj(t, exampleBindRequest)},
		{"Topology", admin.Dynamic.Resource(topologyGVR), obj(t, fmt.Sprintf(exampleTopology, id))},
	}
	for _, c := range cases {
		created, err := c.ri.Create(ctx, c.obj, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Errorf("%s: rejected: %v", c.name, err)
			continue
		}
		got, err := c.ri.Get(ctx, created.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !equalJSON(got.Object["spec"], c.obj.Object["spec"]) {
			t.Errorf("%s: stored spec differs from the one sent\nsent: %s\nstored: %s", c.name,
				toJSON(c.obj.Object["spec"]), toJSON(got.Object["spec"]))
		}
	}
}

// Malformed objects are rejected by the schemas, with the reason the API server gives.
func TestCRDsRejectMalformed(t *testing.T) {
	ctx := ctxFor(t)
	ns := newNamespace(t, ctx, "crds-bad")
	id := suffix()
	queue := func(spec string) *unstructured.Unstructured {
		return obj(t, "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: bad-"+id+"}\nspec: "+spec)
	}
	pg := func(spec string) *unstructured.Unstructured {
		return obj(t, "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: bad}\nspec: "+spec)
	}
	br := func(spec string) *unstructured.Unstructured {
		return obj(t, "apiVersion: scheduling.run.ai/v1alpha2\nkind: BindRequest\nmetadata: {name: bad}\nspec: "+spec)
	}
	topo := func(rest string) *unstructured.Unstructured {
		return obj(t, "apiVersion: kai.scheduler/v1alpha1\nkind: Topology\nmetadata: {name: bad-"+id+"}\n"+rest)
	}
	var seventeen []string
	for i := 0; i < 17; i++ {
		seventeen = append(seventeen, fmt.Sprintf("{nodeLabel: example.com/l%d}", i))
	}
	cases := []struct {
		name string
		gvr  schema.GroupVersionResource
		obj  *unstructured.Unstructured
		want string // part of the API server's message
	}{
		{"queue quota not a number", queueGVR, queue(`{resources: {gpu: {quota: lots}}}`), "spec.resources.gpu.quota"},
		{"queue priority not an integer", queueGVR, queue(`{priority: high}`), "spec.priority"},
		{"queue parent not a string", queueGVR, queue(`{parentQueue: {name: x}}`), "spec.parentQueue"},
		{"podgroup minMember 0", podGroupGVR, pg(`{minMember: 0, queue: q}`), "spec.minMember"},
		{"podgroup unknown preemptibility", podGroupGVR, pg(`{minMember: 1, preemptibility: sometimes}`), "spec.preemptibility"},
		{"podgroup subgroup without name", podGroupGVR, pg(`{minMember: 1, subGroups: [{minMember: 1}]}`), "spec.subGroups[0].name"},
		{"podgroup subgroup empty name", podGroupGVR, pg(`{minMember: 1, subGroups: [{name: ""}]}`), "spec.subGroups[0].name"},
		// KAI v0.17 allows 0 (an elastic sub-group: PyTorchJob segments past the minimum).
		{"podgroup subgroup minMember -1", podGroupGVR, pg(`{subGroups: [{name: a, minMember: -1}]}`), "spec.subGroups[0].minMember"},
		{"podgroup minSubGroup 0", podGroupGVR, pg(`{minSubGroup: 0, subGroups: [{name: a, minMember: 1}]}`), "spec.minSubGroup"},
		{"bindrequest gpu count not an integer", bindRequestGVR, br(`{podName: p, receivedGPU: {count: two}}`), "spec.receivedGPU.count"},
		{"bindrequest backoffLimit not an integer", bindRequestGVR, br(`{podName: p, backoffLimit: 1.5}`), "spec.backoffLimit"},
		{"bindrequest device result without driver", bindRequestGVR,
			br(`{podName: p, resourceClaimAllocations: [{name: c, allocation: {devices: {results: [{request: r, pool: p, device: d}]}}}]}`),
			"driver"},
		{"bindrequest extended mapping without requestName", bindRequestGVR,
			br(`{podName: p, extendedResourceClaimAllocation: {containerMappings: [{containerName: c, resourceName: example.com/x}]}}`),
			"requestName"},
		{"topology without spec", topologyGVR, topo(""), "spec"},
		{"topology without levels", topologyGVR, topo("spec: {levels: []}"), "spec.levels"},
		{"topology with 17 levels", topologyGVR, topo("spec: {levels: [" + strings.Join(seventeen, ", ") + "]}"), "spec.levels"},
		{"topology duplicate level", topologyGVR,
			topo("spec: {levels: [{nodeLabel: example.com/rack}, {nodeLabel: example.com/rack}]}"), "must be unique"},
		{"topology hostname not lowest", topologyGVR,
			topo("spec: {levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: example.com/rack}]}"), "lowest level"},
		{"topology invalid label", topologyGVR, topo("spec: {levels: [{nodeLabel: 'bad label!'}]}"), "spec.levels[0].nodeLabel"},
		{"topology empty label", topologyGVR, topo("spec: {levels: [{nodeLabel: ''}]}"), "spec.levels[0].nodeLabel"},
	}
	for _, c := range cases {
		var ri dynamic.ResourceInterface = admin.Dynamic.Resource(c.gvr)
		if c.gvr == podGroupGVR || c.gvr == bindRequestGVR {
			ri = admin.Dynamic.Resource(c.gvr).Namespace(ns)
		}
		_, err := ri.Create(ctx, c.obj, metav1.CreateOptions{})
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			ri.Delete(ctx, c.obj.GetName(), metav1.DeleteOptions{})
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an Invalid error naming %q, got %v", c.name, c.want, err)
		}
	}

	// Unknown fields: rejected under strict validation, pruned otherwise.
	unknown := queue(`{displayName: x, bogus: 1}`)
	if _, err := admin.Dynamic.Resource(queueGVR).Create(ctx, unknown, metav1.CreateOptions{FieldValidation: "Strict"}); err == nil ||
		!strings.Contains(err.Error(), "unknown field") {
		t.Errorf("strict create with an unknown field: want an unknown-field error, got %v", err)
	}
	created, err := admin.Dynamic.Resource(queueGVR).Create(ctx, unknown, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create with an unknown field (pruned): %v", err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(created.Object, "spec", "bogus"); found {
		t.Errorf("unknown field spec.bogus was stored, not pruned")
	}

	// Topology levels are immutable.
	topology := obj(t, fmt.Sprintf(exampleTopology, "imm-"+id))
	tri := admin.Dynamic.Resource(topologyGVR)
	stored, err := tri.Create(ctx, topology, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedSlice(stored.Object, []interface{}{map[string]interface{}{"nodeLabel": "example.com/rack"}}, "spec", "levels")
	if _, err := tri.Update(ctx, stored, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("changing topology levels: want an immutable error, got %v", err)
	}
}

// Status is a subresource: writes to the main resource do not change it, writes to /status do
// (and do not change the spec).
func TestCRDsStatusSubresource(t *testing.T) {
	ctx := ctxFor(t)
	ri := admin.Dynamic.Resource(queueGVR)
	q := obj(t, fmt.Sprintf(exampleQueue, "status-"+suffix()))
	created, err := ri.Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]interface{}{
		"childQueues": []interface{}{"a", "b"},
		"allocated":   map[string]interface{}{"nvidia.com/gpu": "2", "cpu": "4", "memory": "8Gi"},
		"requested":   map[string]interface{}{"nvidia.com/gpu": "3"},
		"conditions": []interface{}{map[string]interface{}{"type": "OverQuota", "status": "False",
			"lastTransitionTime": "2025-06-01T10:00:00Z", "reason": "Within", "message": "below quota"}},
	}
	created.Object["status"] = status
	afterMain, err := ri.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found := afterMain.Object["status"]; found {
		t.Errorf("status written through the main resource: %v", afterMain.Object["status"])
	}
	afterMain.Object["status"] = status
	unstructured.SetNestedField(afterMain.Object, "changed", "spec", "displayName")
	afterStatus, err := ri.UpdateStatus(ctx, afterMain, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(afterStatus.Object["status"], status) {
		t.Errorf("status after /status update: %s", toJSON(afterStatus.Object["status"]))
	}
	if name, _, _ := unstructured.NestedString(afterStatus.Object, "spec", "displayName"); name != "Research" {
		t.Errorf("a /status update changed spec.displayName to %q", name)
	}
	bad := afterStatus.DeepCopy()
	bad.Object["status"] = map[string]interface{}{"allocated": map[string]interface{}{"cpu": "four"}}
	if _, err := ri.UpdateStatus(ctx, bad, metav1.UpdateOptions{}); err == nil {
		t.Errorf("status with a malformed quantity accepted")
	}

	// Printer columns: what `kubectl get queues` shows.
	table := getTable(t, "/apis/scheduling.run.ai/v2/queues/"+created.GetName())
	if len(table.Rows) != 1 {
		t.Fatalf("table rows: %+v", table.Rows)
	}
	got := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		got[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	want := map[string]string{"Priority": "150", "Parent": "default-parent-queue", "Children": `["a","b"]`, "DisplayName": "Research"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("column %s = %q, want %q (row %v)", k, got[k], v, got)
		}
	}
}

func getTable(t *testing.T, path string) *metav1.Table {
	t.Helper()
	client, err := rest.HTTPClientFor(admin.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", strings.TrimSuffix(admin.Config.Host, "/")+path, nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	return &table
}
