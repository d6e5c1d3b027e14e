// Package suite is the end-to-end test suite: it runs against a control plane prepared by
// `tests/e2e/run.sh up DIR` (GANTRY_E2E_DIR=DIR) and checks Gantry's deployment artifacts there.
package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"gantry/tests/e2e/driver/harness"
)

var (
	env                  *harness.Env
	admin, sched, binder *harness.Clients
	grouper              *harness.Clients
	queueGVR             = schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2", Resource: "queues"}
	podGroupGVR          = schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2alpha2", Resource: "podgroups"}
	bindRequestGVR       = schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v1alpha2", Resource: "bindrequests"}
	topologyGVR          = schema.GroupVersionResource{Group: "kai.scheduler", Version: "v1alpha1", Resource: "topologies"}
)

func TestMain(m *testing.M) {
	var err error
	env, err = harness.Load("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	admin = mustClients("admin")
	sched = mustClients(harness.SchedulerUser)
	binder = mustClients(harness.BinderUser)
	grouper = mustClients(harness.PodGrouperUser)
	os.Exit(m.Run())
}

func mustClients(user string) *harness.Clients {
	c, err := env.Clients(user)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	return c
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// suffix makes names unique per run (namespaces cannot be deleted without a controller-manager).
func suffix() string {
	return fmt.Sprintf("%05d", rand.Intn(100000))
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	name := prefix + "-" + suffix()
	_, err := admin.Kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// obj parses one YAML object.
func obj(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]interface{}
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("bad test YAML: %v\n%s", err, text)
	}
	return &unstructured.Unstructured{Object: m}
}

// normalize round-trips a value through JSON so numbers compare equal whatever their Go type.
func normalize(v interface{}) interface{} {
	data, _ := json.Marshal(v)
	var out interface{}
	json.Unmarshal(data, &out)
	return out
}

func equalJSON(a, b interface{}) bool { return reflect.DeepEqual(normalize(a), normalize(b)) }

func toJSON(v interface{}) string {
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}

// pendingPod is a pod for the Gantry scheduler (KAI's scheduler name and queue label).
func pendingPod(name string, gpus int64) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kai.scheduler/queue": "default-queue"}},
		Spec: corev1.PodSpec{
			SchedulerName: "kai-scheduler",
			Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Resources: corev1.ResourceRequirements{}}},
		},
	}
	if gpus > 0 {
		q := *resourceQuantity(gpus)
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": q}
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": q}
	}
	return pod
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

func unstructuredSet(u *unstructured.Unstructured, value interface{}, fields ...string) {
	unstructured.SetNestedField(u.Object, value, fields...)
}

func unstructuredString(u *unstructured.Unstructured, fields ...string) (string, bool, error) {
	return unstructured.NestedString(u.Object, fields...)
}
