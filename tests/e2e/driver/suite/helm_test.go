package suite

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"gantry/tests/e2e/driver/harness"
)

func chartDir() string { return filepath.Join(env.RepoRoot, "deploy", "helm", "gantry") }

func render(t *testing.T, namespace string, overrides map[string]interface{}) []*unstructured.Unstructured {
	t.Helper()
	out, how, err := harness.RenderChart(chartDir(), "gantry", namespace, overrides)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	t.Logf("chart rendered with %s", how)
	objs, err := harness.DecodeYAML([]byte(out))
	if err != nil {
		t.Fatalf("rendered chart is not YAML: %v\n%s", err, out)
	}
	return objs
}

func objKey(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// withoutChecksum drops the chart's config-checksum pod annotation (it makes pods restart when
// the configuration changes; the plain manifests have no templating to compute it).
func withoutChecksum(o *unstructured.Unstructured) *unstructured.Unstructured {
	o = o.DeepCopy()
	ann, found, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "annotations")
	if found {
		delete(ann, "checksum/config")
		if len(ann) == 0 {
			unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "annotations")
		} else {
			unstructured.SetNestedStringMap(o.Object, ann, "spec", "template", "metadata", "annotations")
		}
	}
	return o
}

// The chart with its default values renders exactly the plain manifests of deploy/ (less the
// Namespace, which `helm install --create-namespace` makes), and ships the same CRDs.
func TestHelmChartMatchesPlainManifests(t *testing.T) {
	rendered := render(t, harness.Namespace, nil)
	files, err := harness.KustomizationResources(env.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := env.ReadManifests(files...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*unstructured.Unstructured{}
	for _, o := range plain {
		if o.GetKind() != "Namespace" {
			want[objKey(o)] = o
		}
	}
	got := map[string]*unstructured.Unstructured{}
	for _, o := range rendered {
		if o.GetKind() == "Namespace" {
			continue // deploy/namespace.yaml's, which the chart creates only where Helm does not
		}
		if _, dup := got[objKey(o)]; dup {
			t.Errorf("chart renders %s twice", objKey(o))
		}
		got[objKey(o)] = o
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("chart does not render %s", k)
			continue
		}
		if !equalJSON(withoutChecksum(g).Object, w.Object) {
			t.Errorf("%s differs between the chart and deploy/\nchart: %s\ndeploy: %s", k, toJSON(withoutChecksum(g).Object), toJSON(w.Object))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("chart renders %s, which deploy/ does not have", k)
		}
	}
	if len(got) < 10 {
		t.Errorf("only %d objects rendered", len(got))
	}

	crds, _ := harness.CRDFiles(env.RepoRoot)
	chartCRDs, _ := filepath.Glob(filepath.Join(chartDir(), "crds", "*.yaml"))
	if len(crds) != 4 || len(chartCRDs) != len(crds) {
		t.Fatalf("CRD files: deploy/crds %d, chart %d", len(crds), len(chartCRDs))
	}
	for _, f := range crds {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(chartDir(), "crds", filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("chart crds/%s differs from deploy/crds (copy it over): %v", filepath.Base(f), err)
		}
	}
}

// Values take effect, and everything the chart renders into another namespace is valid for the
// API server (server-side dry run).
func TestHelmChartValues(t *testing.T) {
	ctx := ctxFor(t)
	ns := newNamespace(t, ctx, "helm")
	objs := render(t, ns, map[string]interface{}{
		"image":              map[string]interface{}{"repository": "registry.example.com/gantry", "tag": "1.2.3"},
		"schedulerName":      "gantry",
		"scheduler":          map[string]interface{}{"replicas": 2, "period": "500ms"},
		"binder":             map[string]interface{}{"replicas": 3},
		"podgrouper":         map[string]interface{}{"replicas": 4},
		"podgroupController": map[string]interface{}{"replicas": 5},
		"queueController":    map[string]interface{}{"replicas": 6, "metricsNamespace": "acme"},
		"nodeSelector":       map[string]interface{}{"node-role.kubernetes.io/control-plane": ""},
		"tolerations":        []interface{}{map[string]interface{}{"key": "dedicated", "operator": "Exists"}},
		"defaultQueues":      map[string]interface{}{"create": false},
		"imagePullSecrets":   []interface{}{map[string]interface{}{"name": "regcred"}},
	})
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
		if o.GetKind() == "Queue" {
			t.Errorf("defaultQueues.create=false still renders Queue %s", o.GetName())
		}
		// Everything goes into the release's namespace, but for KAI's fixed namespace of GPU
		// reservation pods.
		if o.GetNamespace() != "" && o.GetNamespace() != ns && o.GetNamespace() != "kai-resource-reservation" {
			t.Errorf("%s rendered into namespace %q, want %q", objKey(o), o.GetNamespace(), ns)
		}
		if o.GetKind() != "Deployment" {
			continue
		}
		replicas, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		wantReplicas := map[string]int64{"gantry-scheduler": 2, "gantry-binder": 3, "gantry-podgrouper": 4,
			"gantry-podgroup-controller": 5, "gantry-queue-controller": 6}[o.GetName()]
		if replicas != wantReplicas {
			t.Errorf("%s replicas %d, want %d", o.GetName(), replicas, wantReplicas)
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		c := containers[0].(map[string]interface{})
		if c["image"] != "registry.example.com/gantry:1.2.3" {
			t.Errorf("%s image %v", o.GetName(), c["image"])
		}
		if o.GetName() == "gantry-queue-controller" && !strings.Contains(fmt.Sprint(c["args"]), "--metrics-namespace acme") {
			t.Errorf("queue-controller args %v", c["args"])
		}
		if o.GetName() == "gantry-podgrouper" && !strings.Contains(fmt.Sprint(c["args"]), "--scheduler-name gantry") {
			t.Errorf("podgrouper args %v", c["args"])
		}
		if o.GetName() == "gantry-scheduler" {
			args := fmt.Sprint(c["args"])
			if !strings.Contains(args, "--scheduler-name gantry") || !strings.Contains(args, "--period 500ms") {
				t.Errorf("scheduler args %s", args)
			}
		}
		sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "spec", "nodeSelector")
		tol, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "tolerations")
		secrets, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "imagePullSecrets")
		if _, ok := sel["node-role.kubernetes.io/control-plane"]; !ok || len(tol) != 1 || len(secrets) != 1 {
			t.Errorf("%s placement not rendered: nodeSelector %v tolerations %v imagePullSecrets %v", o.GetName(), sel, tol, secrets)
		}
	}
	sort.Strings(kinds)
	t.Logf("rendered: %v", kinds)

	for _, o := range render(t, ns, nil) {
		ri, err := admin.Resource(o)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := o.MarshalJSON()
		force := true
		_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager: "helm-dry-run", Force: &force, DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		if err != nil {
			t.Errorf("API server refuses %s: %v", objKey(o), err)
		}
	}
}

// scheduler.nodePools: one more scheduler Deployment per pool, serving it (KAI's scheduling
// shards), each with a lease name its Role allows; the default scheduler stays as it was.
func TestHelmChartNodePools(t *testing.T) {
	ctx := ctxFor(t)
	ns := newNamespace(t, ctx, "helm-pools")
	objs := render(t, ns, map[string]interface{}{
		"scheduler": map[string]interface{}{"nodePools": []interface{}{"pool-a", "pool-b"}},
	})
	args := map[string]string{}
	var leases []string
	services := map[string]string{} // metrics Service name -> its app label and selector
	for _, o := range objs {
		switch {
		case o.GetKind() == "Service" && strings.HasPrefix(o.GetName(), "gantry-scheduler"):
			sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector")
			services[o.GetName()] = o.GetLabels()["app"] + " " + sel["app.kubernetes.io/name"]
		case o.GetKind() == "Deployment" && strings.HasPrefix(o.GetName(), "gantry-scheduler"):
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args[o.GetName()] = fmt.Sprint(containers[0].(map[string]interface{})["args"])
			sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
			if sel["app.kubernetes.io/name"] != o.GetName() {
				t.Errorf("%s selects %v: Deployments' selectors must not overlap", o.GetName(), sel)
			}
		case o.GetKind() == "Role" && o.GetName() == "gantry-scheduler-leader-election":
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				names, _, _ := unstructured.NestedStringSlice(r.(map[string]interface{}), "resourceNames")
				leases = append(leases, names...)
			}
		}
	}
	if len(args) != 3 {
		t.Fatalf("scheduler Deployments %v, want gantry-scheduler and one per pool", args)
	}
	if strings.Contains(args["gantry-scheduler"], "--partition-label-value") {
		t.Errorf("the default scheduler serves a pool: %s", args["gantry-scheduler"])
	}
	for _, pool := range []string{"pool-a", "pool-b"} {
		if !strings.Contains(args["gantry-scheduler-"+pool], "--partition-label-value "+pool) {
			t.Errorf("gantry-scheduler-%s args %s", pool, args["gantry-scheduler-"+pool])
		}
	}
	sort.Strings(leases)
	if want := []string{"gantry-scheduler", "gantry-scheduler-pool-a", "gantry-scheduler-pool-b"}; !equalJSON(leases, want) {
		t.Errorf("lease names the scheduler may hold: %v, want %v", leases, want)
	}
	// One metrics Service per scheduler, labelled app: <schedulerName>-<shard> as KAI's operator
	// labels its per-shard Services, each selecting its own Deployment's pods.
	wantServices := map[string]string{
		"gantry-scheduler":        "kai-scheduler-default gantry-scheduler",
		"gantry-scheduler-pool-a": "kai-scheduler-pool-a gantry-scheduler-pool-a",
		"gantry-scheduler-pool-b": "kai-scheduler-pool-b gantry-scheduler-pool-b",
	}
	if !equalJSON(services, wantServices) {
		t.Errorf("scheduler metrics Services (app label, selector): %v, want %v", services, wantServices)
	}
}

// KAI's SchedulingShards, as `kubectl get schedulingshards -o yaml` lists them, through
// `gantry kai-shard -o helm-values` into the chart: each pool's scheduler mounts a ConfigMap with
// its own shard's configuration and takes its shard's args; the default pool's shard becomes
// scheduler.config.
func TestHelmChartFromKAIShards(t *testing.T) {
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	shards := filepath.Join(t.TempDir(), "shards.yaml")
	if err := os.WriteFile(shards, []byte(`apiVersion: v1
kind: List
items:
- apiVersion: kai.scheduler/v1
  kind: SchedulingShard
  metadata: {name: default}
  spec: {kValue: 0.5}
- apiVersion: kai.scheduler/v1
  kind: SchedulingShard
  metadata: {name: inference}
  spec:
    partitionLabelValue: pool-b
    placementStrategy: {gpu: spread}
    args: {schedule-period: 2s}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "kai-shard", "-o", "helm-values", shards)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gantry kai-shard: %v\n%s", err, stderr.String())
	}
	var values map[string]interface{}
	if err := yaml.Unmarshal(out, &values); err != nil {
		t.Fatalf("kai-shard's values are not YAML: %v\n%s", err, out)
	}
	objs := render(t, newNamespace(t, ctxFor(t), "helm-shards"), values)

	configs := map[string]string{} // ConfigMap -> config.yaml
	mounts := map[string]string{}  // scheduler Deployment -> the ConfigMap it mounts
	args := map[string]string{}
	for _, o := range objs {
		switch {
		case o.GetKind() == "ConfigMap" && strings.HasPrefix(o.GetName(), "gantry-scheduler-config"):
			configs[o.GetName()], _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
		case o.GetKind() == "Deployment" && strings.HasPrefix(o.GetName(), "gantry-scheduler"):
			spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
			for _, v := range volumes {
				if name, found, _ := unstructured.NestedString(v.(map[string]interface{}), "configMap", "name"); found {
					mounts[o.GetName()] = name
				}
			}
			containers, _, _ := unstructured.NestedSlice(spec, "containers")
			args[o.GetName()] = fmt.Sprint(containers[0].(map[string]interface{})["args"])
		}
	}
	if want := map[string]string{
		"gantry-scheduler":        "gantry-scheduler-config",
		"gantry-scheduler-pool-b": "gantry-scheduler-config-pool-b",
	}; !equalJSON(mounts, want) {
		t.Fatalf("scheduler Deployments mount %v, want %v", mounts, want)
	}
	def, pool := configs["gantry-scheduler-config"], configs["gantry-scheduler-config-pool-b"]
	if !strings.Contains(def, "kValue: \"0.5\"") || !strings.Contains(def, "name: gpupack") ||
		!strings.Contains(def, "consolidation") {
		t.Errorf("default pool's configuration is not its shard's (kValue 0.5, binpack):\n%s", def)
	}
	if !strings.Contains(pool, "name: gpuspread") || strings.Contains(pool, "name: gpupack") ||
		strings.Contains(pool, "consolidation") {
		t.Errorf("pool-b's configuration is not its shard's (GPU spread, no consolidation):\n%s", pool)
	}
	if !strings.Contains(args["gantry-scheduler-pool-b"], "--partition-label-value pool-b --schedule-period=2s") {
		t.Errorf("pool-b's scheduler args %s, want its pool and its shard's --schedule-period=2s", args["gantry-scheduler-pool-b"])
	}
	if strings.Contains(args["gantry-scheduler"], "--schedule-period=2s") {
		t.Errorf("the default scheduler took pool-b's args: %s", args["gantry-scheduler"])
	}
}
