package suite

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// What `kubectl apply -k deploy/` installed (setup applied it) is consistent: each Deployment runs
// the gantry verb under the ServiceAccount deploy/rbac binds, serves its probes on port 8080, and
// the scheduler mounts its configuration; the default queues form KAI's tree.
func TestDeployManifestsInstalled(t *testing.T) {
	ctx := ctxFor(t)
	ns := harness.Namespace
	verbs := map[string]string{"gantry-scheduler": "scheduler", "gantry-binder": "binder",
		"gantry-podgrouper": "podgrouper", "gantry-podgroup-controller": "podgroup-controller",
		"gantry-queue-controller": "queue-controller"}
	for name, verb := range verbs {
		d, err := admin.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("Deployment %s: %v", name, err)
			continue
		}
		checkDeployment(t, d, verb)
		sa := d.Spec.Template.Spec.ServiceAccountName
		if _, err := admin.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{}); err != nil {
			t.Errorf("%s runs as ServiceAccount %q: %v", name, sa, err)
		}
		crb, err := admin.Kube.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("ClusterRoleBinding %s: %v", name, err)
			continue
		}
		bound := false
		for _, s := range crb.Subjects {
			bound = bound || (s.Kind == "ServiceAccount" && s.Name == sa && s.Namespace == ns)
		}
		if !bound || crb.RoleRef.Name != name {
			t.Errorf("ClusterRoleBinding %s does not bind role %s to %s/%s: %+v", name, name, ns, sa, crb)
		}
	}
	cm, err := admin.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "gantry-scheduler-config", metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["config.yaml"], "actions:") {
		t.Errorf("scheduler ConfigMap: %v %v", err, cm.Data)
	}

	queues := admin.Dynamic.Resource(queueGVR)
	parent, err := queues.Get(ctx, "default-parent-queue", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := queues.Get(ctx, "default-queue", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := unstructured.NestedString(leaf.Object, "spec", "parentQueue"); p != "default-parent-queue" {
		t.Errorf("default-queue parent %q", p)
	}
	if p, found, _ := unstructured.NestedString(parent.Object, "spec", "parentQueue"); found && p != "" {
		t.Errorf("default-parent-queue has parent %q", p)
	}
	for _, q := range []*unstructured.Unstructured{parent, leaf} {
		for _, r := range []string{"gpu", "cpu", "memory"} {
			res, _, _ := unstructured.NestedMap(q.Object, "spec", "resources", r)
			if !equalJSON(res, map[string]interface{}{"quota": 0, "limit": -1, "overQuotaWeight": 1}) {
				t.Errorf("%s %s: %v, want quota 0, limit -1 (unlimited), overQuotaWeight 1", q.GetName(), r, res)
			}
		}
	}
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, verb string) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers", d.Name, len(spec.Containers))
	}
	c := spec.Containers[0]
	if strings.Join(c.Command, " ") != "gantry "+verb {
		t.Errorf("%s command %v, want gantry %s", d.Name, c.Command, verb)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != "http" {
		t.Errorf("%s ports %+v, want http 8080", d.Name, c.Ports)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s probes: liveness %+v readiness %+v", d.Name, c.LivenessProbe, c.ReadinessProbe)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s resources %+v", d.Name, c.Resources)
	}
	sc := spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("%s must run as the image's non-root user 65532: %+v", d.Name, sc)
	}
	if verb == "binder" {
		// KAI's flag for the image of the GPU reservation pods, set to KAI's published image.
		if args := strings.Join(c.Args, " "); !strings.Contains(args, "--resource-reservation-pod-image ghcr.io/nvidia/kai-scheduler/resource-reservation:") {
			t.Errorf("binder args %q", args)
		}
	}
	if verb == "podgrouper" {
		if args := strings.Join(c.Args, " "); !strings.Contains(args, "--scheduler-name kai-scheduler") {
			t.Errorf("podgrouper args %q", args)
		}
	}
	if verb == "podgroup-controller" || verb == "queue-controller" {
		// One active replica: KAI's --leader-elect, off by default in the binary.
		if args := strings.Join(c.Args, " "); !strings.Contains(args, "--leader-elect") ||
			(verb == "queue-controller" && !strings.Contains(args, "--metrics-namespace kai")) {
			t.Errorf("%s args %q", verb, args)
		}
	}
	if verb == "scheduler" {
		args := strings.Join(c.Args, " ")
		if !strings.Contains(args, "--scheduler-name kai-scheduler") || !strings.Contains(args, "--config /etc/gantry/config.yaml") {
			t.Errorf("scheduler args %q", args)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && m.MountPath == "/etc/gantry" && v.ConfigMap != nil && v.ConfigMap.Name == "gantry-scheduler-config" {
					mounted = true
				}
			}
		}
		if !mounted {
			t.Errorf("scheduler does not mount gantry-scheduler-config at /etc/gantry")
		}
	}
}

// The shipped scheduler configuration loads in the gantry binary and decides exactly as Gantry's
// built-in defaults do on the example clusters (set GANTRY_BIN to the binary; CTest does).
func TestSchedulerConfigLoads(t *testing.T) {
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	objs, err := env.ReadManifests("deploy/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	config, _, _ := unstructured.NestedString(objs[0].Object, "data", "config.yaml")
	dir := t.TempDir()
	shipped := filepath.Join(dir, "config.yaml")
	os.WriteFile(shipped, []byte(config), 0o644)
	other := filepath.Join(dir, "spread.yaml")
	os.WriteFile(other, []byte("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeplacement\n    arguments: {gpu: spread, cpu: spread}\n"), 0o644)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("gantry %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	examples, _ := filepath.Glob(filepath.Join(env.RepoRoot, "examples", "*.yaml"))
	if len(examples) == 0 {
		t.Fatal("no examples")
	}
	simulation := regexp.MustCompile(`(?m)^simulation:`)
	// An example whose configuration lists its own plugins (with their arguments, e.g. proportion's
	// kValue) does not run on the defaults, so there is nothing to compare the shipped file with.
	ownPlugins := regexp.MustCompile(`(?m)^config:\n(?:  .*\n)*?  plugins:`)
	for _, ex := range examples {
		// Simulation files (a top-level `simulation:` key) are run by `gantry simulate`, not `cycle`.
		text, err := os.ReadFile(ex)
		if err == nil && (simulation.Match(text) || ownPlugins.Match(text)) {
			continue
		}
		if a, b := run("cycle", ex, "--cycles", "2"), run("cycle", ex, "--cycles", "2", "--config", shipped); a != b {
			t.Errorf("%s: the shipped configuration decides differently from the defaults\ndefaults:\n%s\nshipped:\n%s", ex, a, b)
		}
	}
	// --config is honoured (else the comparison above proves nothing).
	ex := filepath.Join(env.RepoRoot, "examples", "small-cluster.yaml")
	if run("cycle", ex) == run("cycle", ex, "--config", other) {
		t.Errorf("a different configuration did not change the decisions on %s", ex)
	}
}

// The Dockerfile's build stage installs the packages scripts/setup.sh's PACKAGES lists (less
// valgrind; its TEST_PACKAGES are test tools) plus libcurl, and its runtime user is the uid deploy/ runs as. (Building the image needs a
// container engine and base images, which the test machines do not have.)
func TestDockerfileMatchesSetup(t *testing.T) {
	setup, err := os.ReadFile(filepath.Join(env.RepoRoot, "scripts", "setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	docker, err := os.ReadFile(filepath.Join(env.RepoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)PACKAGES=\((.*?)\)`).FindSubmatch(setup)
	if m == nil {
		t.Fatal("no PACKAGES=(...) in scripts/setup.sh")
	}
	stages := regexp.MustCompile(`(?m)^FROM `).Split(string(docker), -1)[1:]
	if len(stages) != 2 {
		t.Fatalf("want a build stage and a runtime stage, got %d stages", len(stages))
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(stages[0]) {
		words[w] = true
	}
	for _, p := range append(strings.Fields(string(m[1])), "libcurl4-openssl-dev") {
		if p != "valgrind" && !words[p] {
			t.Errorf("Dockerfile build stage does not install %s", p)
		}
	}
	if !strings.Contains(stages[1], "USER 65532:65532") || !strings.Contains(stages[0], "debian:bookworm") {
		t.Errorf("runtime stage must run as 65532 and the build stage use Debian bookworm")
	}
}
