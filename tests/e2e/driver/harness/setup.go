package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyCRDs applies deploy/crds and waits until every CRD is Established.
func (e *Env) ApplyCRDs(ctx context.Context, admin *Clients) ([]string, error) {
	files, err := CRDFiles(e.RepoRoot)
	if err != nil {
		return nil, err
	}
	objs, err := e.ReadManifests(files...)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		if _, err := admin.Apply(ctx, o); err != nil {
			return nil, fmt.Errorf("apply CRD %s: %w", o.GetName(), err)
		}
		names = append(names, o.GetName())
	}
	for _, name := range names {
		if err := WaitCRDEstablished(ctx, admin, name, 30*time.Second); err != nil {
			return nil, err
		}
	}
	admin.Mapper.Reset()
	return names, nil
}

// TestCRDFiles lists tests/e2e/driver/testdata/crds/*.yaml: CRDs of other projects that a cluster
// running Gantry may serve (NodeResourceTopology), installed so their support can be tested.
func TestCRDFiles(root string) ([]string, error) {
	return filepath.Glob(filepath.Join(root, "tests", "e2e", "driver", "testdata", "crds", "*.yaml"))
}

// ApplyTestCRDs applies TestCRDFiles and waits until each is Established (idempotent).
func (e *Env) ApplyTestCRDs(ctx context.Context, admin *Clients) error {
	files, err := TestCRDFiles(e.RepoRoot)
	if err != nil {
		return err
	}
	objs, err := e.ReadManifests(files...)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := admin.Apply(ctx, o); err != nil {
			return fmt.Errorf("apply CRD %s: %w", o.GetName(), err)
		}
		if err := WaitCRDEstablished(ctx, admin, o.GetName(), 30*time.Second); err != nil {
			return err
		}
	}
	admin.Mapper.Reset()
	return nil
}

// CRD reads a CustomResourceDefinition.
func CRD(ctx context.Context, c *Clients, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u, err := c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		return nil, err
	}
	return &crd, nil
}

// WaitCRDEstablished polls until the CRD's Established and NamesAccepted conditions are True.
func WaitCRDEstablished(ctx context.Context, c *Clients, name string, timeout time.Duration) error {
	return Poll(ctx, timeout, "CRD "+name+" established", func(ctx context.Context) (bool, error) {
		crd, err := CRD(ctx, c, name)
		if err != nil {
			return false, err
		}
		ok := map[apiextensionsv1.CustomResourceDefinitionConditionType]bool{}
		for _, cond := range crd.Status.Conditions {
			ok[cond.Type] = cond.Status == apiextensionsv1.ConditionTrue
			if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
				return false, fmt.Errorf("names not accepted: %s", cond.Message)
			}
		}
		return ok[apiextensionsv1.Established] && ok[apiextensionsv1.NamesAccepted], nil
	})
}

// ApplyDeploy applies the files deploy/kustomization.yaml lists (namespace, RBAC, configuration,
// Deployments, default queues): what `kubectl apply -k deploy/` does for a plain resource list.
func (e *Env) ApplyDeploy(ctx context.Context, admin *Clients) error {
	files, err := KustomizationResources(e.RepoRoot)
	if err != nil {
		return err
	}
	objs, err := e.ReadManifests(files...)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := admin.Apply(ctx, o); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// BindUsers gives the static-token users of the components (gantry-scheduler, gantry-binder,
// gantry-podgrouper, gantry-podgroup-controller, gantry-queue-controller) exactly the roles
// deploy/rbac grants the ServiceAccounts of the same names: every binding whose subject is one of
// those ServiceAccounts gets a copy (prefixed e2e-user-) whose subject is the user.
func (e *Env) BindUsers(ctx context.Context, admin *Clients) (int, error) {
	objs, err := e.ReadManifests("deploy/rbac/scheduler.yaml", "deploy/rbac/binder.yaml",
		"deploy/rbac/podgrouper.yaml", "deploy/rbac/podgroup-controller.yaml",
		"deploy/rbac/queue-controller.yaml")
	if err != nil {
		return 0, err
	}
	count := 0
	for _, o := range objs {
		kind := o.GetKind()
		if kind != "ClusterRoleBinding" && kind != "RoleBinding" {
			continue
		}
		raw, _, err := unstructuredSlice(o.Object, "subjects")
		if err != nil {
			return 0, err
		}
		var users []rbacv1.Subject
		for _, item := range raw {
			m, _ := item.(map[string]interface{})
			name, _ := m["name"].(string)
			if m["kind"] == rbacv1.ServiceAccountKind && (name == SchedulerUser || name == BinderUser || name == PodGrouperUser ||
				name == PodGroupControllerUser || name == QueueControllerUser) {
				users = append(users, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name})
			}
		}
		if len(users) == 0 {
			continue
		}
		copyObj := o.DeepCopy()
		copyObj.SetName("e2e-user-" + o.GetName())
		subj := make([]interface{}, 0, len(users))
		for _, u := range users {
			subj = append(subj, map[string]interface{}{"kind": u.Kind, "apiGroup": u.APIGroup, "name": u.Name})
		}
		copyObj.Object["subjects"] = subj
		if _, err := admin.Apply(ctx, copyObj); err != nil {
			return 0, fmt.Errorf("bind %s: %w", copyObj.GetName(), err)
		}
		count++
	}
	return count, nil
}

func unstructuredSlice(obj map[string]interface{}, key string) ([]interface{}, bool, error) {
	v, ok := obj[key]
	if !ok {
		return nil, false, nil
	}
	s, ok := v.([]interface{})
	if !ok {
		return nil, false, fmt.Errorf("%s is not a list", key)
	}
	return s, true, nil
}

// GPUNode describes a fake node.
type GPUNode struct {
	Name   string
	GPUs   int64
	CPU    string // e.g. "64"
	Memory string // e.g. "512Gi"
	Pods   int64
	Labels map[string]string
}

// CreateGPUNode creates a Node object with the capacity of a GPU server, Ready, and labelled for
// the fake kubelet. Status set on create is kept for nodes (that is how kubelets register), but it
// is written again through /status in case the server dropped it.
func CreateGPUNode(ctx context.Context, admin *Clients, n GPUNode) (*corev1.Node, error) {
	if n.CPU == "" {
		n.CPU = "64"
	}
	if n.Memory == "" {
		n.Memory = "512Gi"
	}
	if n.Pods == 0 {
		n.Pods = 110
	}
	labels := map[string]string{
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"nvidia.com/gpu.present": "true",
		FakeNodeLabel:            "true",
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(n.CPU),
		corev1.ResourceMemory: resource.MustParse(n.Memory),
		corev1.ResourcePods:   *resource.NewQuantity(n.Pods, resource.DecimalSI),
		"nvidia.com/gpu":      *resource.NewQuantity(n.GPUs, resource.DecimalSI),
	}
	now := metav1.Now()
	status := corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "fake kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory",
				LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure",
				LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID",
				LastHeartbeatTime: now, LastTransitionTime: now},
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: n.Name}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.1-fake", OperatingSystem: "linux", Architecture: "amd64"},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels}, Status: status}
	created, err := admin.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		created, err = admin.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	got := created.Status.Capacity["nvidia.com/gpu"]
	if got.Value() != n.GPUs || len(created.Status.Conditions) == 0 {
		created.Status = status
		created, err = admin.Kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: FieldManager})
		if err != nil {
			return nil, err
		}
	}
	// Admission (TaintNodesByCondition) taints every new node not-ready; the node lifecycle
	// controller lifts that once the node reports Ready. There is no controller-manager here, so
	// play that part.
	var taints []corev1.Taint
	for _, taint := range created.Spec.Taints {
		if taint.Key != corev1.TaintNodeNotReady {
			taints = append(taints, taint)
		}
	}
	if len(taints) != len(created.Spec.Taints) {
		created.Spec.Taints = taints
		return admin.Kube.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{FieldManager: FieldManager})
	}
	return created, nil
}

// Setup prepares a started control plane for Gantry: CRDs, deploy/ (namespace, RBAC, config,
// Deployments, default queues), user bindings, and `nodes` fake GPU nodes with 8 GPUs each.
func (e *Env) Setup(ctx context.Context, nodes int) error {
	admin, err := e.Clients("admin")
	if err != nil {
		return err
	}
	if _, err := e.ApplyCRDs(ctx, admin); err != nil {
		return err
	}
	if err := e.ApplyTestCRDs(ctx, admin); err != nil {
		return err
	}
	if err := e.ApplyDeploy(ctx, admin); err != nil {
		return err
	}
	if _, err := e.BindUsers(ctx, admin); err != nil {
		return err
	}
	for i := 0; i < nodes; i++ {
		if _, err := CreateGPUNode(ctx, admin, GPUNode{Name: fmt.Sprintf("gpu-node-%d", i), GPUs: 8}); err != nil {
			return err
		}
	}
	return nil
}

// SetupWithoutGantry prepares a started control plane where Gantry is not installed: the CRDs
// (KAI's chart installs the same) and `nodes` fake GPU nodes; no deploy/, no user bindings (the
// swap test installs Gantry's chart and binds the users itself).
func (e *Env) SetupWithoutGantry(ctx context.Context, nodes int) error {
	admin, err := e.Clients("admin")
	if err != nil {
		return err
	}
	if _, err := e.ApplyCRDs(ctx, admin); err != nil {
		return err
	}
	for i := 0; i < nodes; i++ {
		if _, err := CreateGPUNode(ctx, admin, GPUNode{Name: fmt.Sprintf("gpu-node-%d", i), GPUs: 8}); err != nil {
			return err
		}
	}
	return nil
}
