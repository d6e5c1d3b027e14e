// Package harness holds what the end-to-end tests and the gantry-e2e tool share: the control
// plane's coordinates (written by control-plane.sh), clients per user, reading and applying the
// deploy/ manifests, fake GPU nodes, and polling with deadlines.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// Users the control plane knows besides admin: one per Gantry component, bound by Setup to the
// component's roles from deploy/rbac.
const (
	SchedulerUser  = "gantry-scheduler"
	BinderUser     = "gantry-binder"
	PodGrouperUser = "gantry-podgrouper"
	// The status controllers (gantry podgroup-controller, gantry queue-controller).
	PodGroupControllerUser = "gantry-podgroup-controller"
	QueueControllerUser    = "gantry-queue-controller"
	// Namespace the deploy/ manifests install into.
	Namespace = "gantry-system"
	// FakeNodeLabel marks nodes whose pods the fake kubelet runs.
	FakeNodeLabel = "gantry-e2e/fake-kubelet"
	FieldManager  = "gantry-e2e"
)

// Env is one running control plane (a folder written by `control-plane.sh start DIR`).
type Env struct {
	Dir      string
	RepoRoot string
}

// Load reads the control plane folder from $GANTRY_E2E_DIR (or the argument when not empty).
func Load(dir string) (*Env, error) {
	if dir == "" {
		dir = os.Getenv("GANTRY_E2E_DIR")
	}
	if dir == "" {
		return nil, errors.New("no control plane: set GANTRY_E2E_DIR to a folder started by control-plane.sh")
	}
	if _, err := os.Stat(filepath.Join(dir, "env")); err != nil {
		return nil, fmt.Errorf("%s is not a running control plane folder: %w", dir, err)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return &Env{Dir: dir, RepoRoot: root}, nil
}

// RepoRoot is $GANTRY_REPO_ROOT, or the folder above tests/e2e found from the working directory.
func RepoRoot() (string, error) {
	if r := os.Getenv("GANTRY_REPO_ROOT"); r != "" {
		return r, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; d != "/" && d != "."; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "deploy", "crds")); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", errors.New("cannot find the repository root (set GANTRY_REPO_ROOT)")
}

// Kubeconfig is the kubeconfig file of a user: "admin" or one of the component users.
func (e *Env) Kubeconfig(user string) string {
	if user == "" || user == "admin" {
		return filepath.Join(e.Dir, "kubeconfig")
	}
	return filepath.Join(e.Dir, "kubeconfig-"+user)
}

// Config is a REST config for a user.
func (e *Env) Config(user string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig(user))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// Clients bundles the typed and dynamic clients of one user.
type Clients struct {
	User    string
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  *restmapper.DeferredDiscoveryRESTMapper
	Config  *rest.Config
}

func (e *Env) Clients(user string) (*Clients, error) {
	cfg, err := e.Config(user)
	if err != nil {
		return nil, err
	}
	return NewClients(user, cfg)
}

// NewClients makes the clients of a user from a REST config (e.g. one with other rate limits).
func NewClients(user string, cfg *rest.Config) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{User: user, Kube: kube, Dynamic: dyn, Config: cfg,
		Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// Resource finds the dynamic resource interface for an object (namespaced or not).
func (c *Clients) Resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// New CRDs: refresh discovery once.
		c.Mapper.Reset()
		m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gvk, err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		return c.Dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// GVR returns the resource of a kind.
func (c *Clients) GVR(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.Mapper.Reset()
		m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return schema.GroupVersionResource{}, err
		}
	}
	return m.Resource, nil
}

// Apply server-side-applies an object (create or update) and returns what the server stored.
func (c *Clients) Apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, err := c.Resource(obj)
	if err != nil {
		return nil, err
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	force := true
	return ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
}

// DecodeYAML splits a multi-document YAML stream into objects, skipping empty documents.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		jsonDoc, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		var m map[string]interface{}
		// (integers stay int64, as in objects read from the API server)
		if err := utiljson.Unmarshal(jsonDoc, &m); err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// ReadManifests decodes YAML files (relative to the repository root when not absolute).
func (e *Env) ReadManifests(paths ...string) ([]*unstructured.Unstructured, error) {
	return ReadManifestFiles(e.RepoRoot, paths...)
}

func ReadManifestFiles(root string, paths ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := DecodeYAML(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// CRDFiles lists deploy/crds/*.yaml.
func CRDFiles(root string) ([]string, error) {
	return filepath.Glob(filepath.Join(root, "deploy", "crds", "*.yaml"))
}

// KustomizationResources lists the files deploy/kustomization.yaml names, in order.
func KustomizationResources(root string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, "deploy", "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, err
	}
	var out []string
	for _, r := range k.Resources {
		out = append(out, filepath.Join(root, "deploy", r))
	}
	return out, nil
}

// Poll calls cond every interval until it returns true or an error, or the deadline passes; the
// last non-nil error or "not yet" reason is reported on timeout.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		done, err := cond(ctx)
		if err == nil && done {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%s: not reached within %s: %w", what, timeout, last)
			}
			return fmt.Errorf("%s: not reached within %s", what, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// IsForbidden tells whether an API error is a 403.
func IsForbidden(err error) bool { return apierrors.IsForbidden(err) }
