package suite

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// KAI v0.17's operator renders the scheduler's ConfigMap and the scheduler's and binder's
// container arguments (tests/data/kai-operator-v0.17/, see its README). Started with those,
// `gantry scheduler` and `gantry binder` must run and schedule a pod: an operator swapping KAI's
// images for Gantry's keeps its Deployments as they are. Only what the pod environment supplies
// is adapted: the file the ConfigMap is mounted at and the listen addresses (loopback ports here,
// a network namespace of its own in a pod), plus the kubeconfig of the test's component users.

var binderProbePort = regexp.MustCompile(`serving /healthz, /readyz on probe port (\d+)`)

// operatorArgs reads one of the rendered argument files (one argument per line).
func operatorArgs(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "tests/data/kai-operator-v0.17", name))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		args = append(args, line)
	}
	return args
}

// adapt replaces the values of the flags named in `with` ("--flag=value" or "--flag value"
// forms); it fails the test when one of them is not in args (the rendering changed).
func adapt(t *testing.T, args []string, with map[string]string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		v, ok := with[name]
		if !ok {
			out = append(out, a)
			continue
		}
		seen[name] = true
		out = append(out, name+"="+v)
		if !hasValue {
			i++ // the value is the next argument
		}
	}
	for name := range with {
		if !seen[name] {
			t.Fatalf("the rendered arguments have no %s: %v", name, args)
		}
	}
	return out
}

// leaseRights lets the scheduler user hold its Lease in namespace ns (KAI's operator gives its
// scheduler's service account that right in KAI's namespace, which --namespace names).
func leaseRights(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	_, err := admin.Kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	shipped, err := admin.Kube.RbacV1().RoleBindings(harness.Namespace).Get(ctx,
		"gantry-scheduler-leader-election", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role, err := admin.Kube.RbacV1().Roles(harness.Namespace).Get(ctx, shipped.RoleRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := "gantry-e2e-operator-leases"
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: role.Rules}
	if _, err := admin.Kube.RbacV1().Roles(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The shipped subjects (the service account) and the test's token user of that name.
	subjects := append(append([]rbacv1.Subject{}, shipped.Subjects...),
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: harness.SchedulerUser})
	b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	if _, err := admin.Kube.RbacV1().RoleBindings(ns).Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func TestOperatorRenderedArgs(t *testing.T) {
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	ctx := ctxFor(t)
	id := suffix()
	node := "operator-" + id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: node, GPUs: 2})
	ns := newNamespace(t, ctx, "operator")
	cleanupPods(t, ns)
	queue := "operator-" + id
	createQueue(t, ctx, queue, 0)

	data := filepath.Join(env.RepoRoot, "tests/data/kai-operator-v0.17")
	schedArgs := adapt(t, operatorArgs(t, "scheduler-args.txt"), map[string]string{
		"--scheduler-conf": filepath.Join(data, "scheduler-config.yaml"),
		"--listen-address": "127.0.0.1:0",
	})
	for _, a := range schedArgs {
		if strings.HasPrefix(a, "--namespace=") {
			leaseRights(t, ctx, strings.TrimPrefix(a, "--namespace="))
		}
	}
	// (A free port for the plugin server: in the pod it has a loopback of its own, on this shared
	// host KAI's 8081 may be taken.)
	sched := startGantryBin(t, bin, "scheduler", append(append([]string{"scheduler"}, schedArgs...),
		"--kubeconfig", env.Kubeconfig(harness.SchedulerUser), "--plugin-server-port", "0")...)

	binderArgs := adapt(t, operatorArgs(t, "binder-args.txt"), map[string]string{
		"--metrics-bind-address":      "127.0.0.1:0",
		"--health-probe-bind-address": "127.0.0.1:0",
	})
	out := startGantryBin(t, bin, "binder", append(append([]string{"binder"}, binderArgs...),
		"--kubeconfig", env.Kubeconfig(harness.BinderUser))...)

	pods := createGang(t, ctx, ns, "one", queue, 1, 1, 1)
	err := harness.Poll(ctx, 60*time.Second, pods[0]+" bound to "+node, func(ctx context.Context) (bool, error) {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, pods[0], metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == node, err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = harness.Poll(ctx, 30*time.Second, "its BindRequest Succeeded", func(ctx context.Context) (bool, error) {
		brs, err := bindRequests(ctx, ns)
		if err != nil || len(brs) != 1 {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(brs[0].Object, "status", "phase")
		return phase == "Succeeded", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// KAI's operator probes the binder on --health-probe-bind-address (:8081): /healthz and
	// /readyz are served there (the binder leads and has listed everything: ready), /metrics not.
	m := binderProbePort.FindStringSubmatch(out.output())
	if m == nil {
		t.Fatalf("the binder names no probe port; output:\n%s", out.output())
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404} {
		resp, err := http.Get("http://127.0.0.1:" + m[1] + path)
		if err != nil {
			t.Errorf("GET %s on the probe port: %v", path, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s on the probe port: %d, want %d", path, resp.StatusCode, want)
		}
	}
	// Every plugin of KAI's operator-rendered configuration is one of Gantry's: none is skipped
	// (a plugin Gantry lacked would be named in an "unknown plugin" warning at start).
	if s := sched.output(); !strings.Contains(s, "gantry scheduler: ") || strings.Contains(s, "unknown plugin") {
		t.Errorf("the scheduler skipped a plugin of KAI's configuration (or printed no start line); output:\n%s", s)
	}
}
