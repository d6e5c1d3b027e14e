package suite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// binderProcess is `gantry binder` running as the gantry-binder user (deploy/'s RBAC), with its
// log kept in the control-plane folder.
type binderProcess struct {
	cmd      *exec.Cmd
	port     int
	identity string
	done     chan error
	stopOnce sync.Once
	exitCode int
	killed   bool // ended by kill (SIGKILL), not stop
	mu       sync.Mutex
	log      []string
}

var servingPort = regexp.MustCompile(`serving /metrics, /healthz, /readyz on port (\d+); campaigning for lease \S+ as (\S+)`)

func startBinder(t *testing.T, bin, logName string) *binderProcess {
	t.Helper()
	return startBinderWorkers(t, bin, logName, "2")
}

// startBinderWorkers starts the binder with `workers` reconcile workers ("": the product's
// default, as deployed).
func startBinderWorkers(t *testing.T, bin, logName, workers string, extra ...string) *binderProcess {
	t.Helper()
	args := []string{"binder", "--kubeconfig", env.Kubeconfig(harness.BinderUser),
		"--metrics-address", "127.0.0.1:0", "--resource-reservation-pod-image", reservationImage}
	if workers != "" {
		args = append(args, "--workers", workers)
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(env.Dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s binder: %v", bin, err)
	}
	p := &binderProcess{cmd: cmd, done: make(chan error, 1)}
	type serving struct {
		port     int
		identity string
	}
	servingCh := make(chan serving, 1)
	go func() {
		scanner := bufio.NewScanner(io.TeeReader(stderr, logFile))
		for scanner.Scan() {
			line := scanner.Text()
			p.mu.Lock()
			p.log = append(p.log, line)
			p.mu.Unlock()
			if m := servingPort.FindStringSubmatch(line); m != nil {
				port, _ := strconv.Atoi(m[1])
				servingCh <- serving{port, m[2]}
			}
		}
		logFile.Close()
		p.done <- cmd.Wait()
	}()
	select {
	case s := <-servingCh:
		p.port, p.identity = s.port, s.identity
	case err := <-p.done:
		t.Fatalf("the binder exited at start (%v):\n%s", err, p.Log())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the binder did not start serving within 30 s:\n%s", p.Log())
	}
	return p
}

func (p *binderProcess) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// stop sends SIGTERM and returns the exit code (-1 when it had to be killed). Idempotent.
func (p *binderProcess) stop() int {
	p.stopOnce.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			p.exitCode = p.cmd.ProcessState.ExitCode()
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
			p.exitCode = -1
		}
	})
	return p.exitCode
}

// kill ends the process with SIGKILL, as a crash would (the lease stays held until it expires);
// a later stop returns -1.
func (p *binderProcess) kill() {
	p.stopOnce.Do(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.exitCode, p.killed = -1, true
	})
}

func (p *binderProcess) get(path string) (int, string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func bindRequest(ns, name string, pod *corev1.Pod, node string, backoffLimit int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "scheduling.run.ai/v1alpha2",
		"kind":       "BindRequest",
		"metadata": map[string]interface{}{
			"name": name, "namespace": ns,
			"ownerReferences": []interface{}{map[string]interface{}{
				"apiVersion": "v1", "kind": "Pod", "name": pod.Name, "uid": string(pod.UID)}},
		},
		"spec": map[string]interface{}{
			"podName": pod.Name, "selectedNode": node, "receivedResourceType": "Regular",
			"receivedGPU":  map[string]interface{}{"count": int64(2), "portion": "1.00"},
			"backoffLimit": backoffLimit,
		},
	}}
	return u
}

// The binder carries out BindRequests the test creates (as the scheduler would), under the
// binder's least-privilege RBAC: a fitting pod is bound and its request Succeeded; a request for
// a node that does not exist is retried up to its backoff limit, then Failed with the pod unbound;
// a pod already bound is a success; its /metrics carry KAI's binder metric names, /healthz and
// /readyz answer 200; a second replica stands by until SIGTERM stops the first cleanly (exit 0,
// lease released), then takes over.
func TestBinder(t *testing.T) {
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	ctx := ctxFor(t)
	id := suffix()
	// `missing` is never created: a request for a node deleted after the binder saw it takes the
	// same path once the binder's node cache has caught up, an order the test cannot observe (a
	// deletion just before the request raced with the cache under load).
	fit, missing := "e2e-bind-"+id, "e2e-missing-"+id
	if _, err := harness.CreateGPUNode(ctx, admin, harness.GPUNode{Name: fit, GPUs: 8}); err != nil {
		t.Fatalf("create node %s: %v", fit, err)
	}
	t.Cleanup(func() { admin.Kube.CoreV1().Nodes().Delete(context.Background(), fit, metav1.DeleteOptions{}) })
	ns := newNamespace(t, ctx, "binder")
	pods := admin.Kube.CoreV1().Pods(ns)
	brs := admin.Dynamic.Resource(bindRequestGVR).Namespace(ns)
	createPod := func(name string) *corev1.Pod {
		t.Helper()
		p, err := pods.Create(ctx, pendingPod(name, 2), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	binder := startBinder(t, bin, "binder-e2e.log")
	t.Cleanup(func() {
		binder.stop()
		if t.Failed() {
			t.Logf("binder log:\n%s", binder.Log())
		}
	})
	if err := harness.Poll(ctx, 60*time.Second, "binder /readyz 200", func(ctx context.Context) (bool, error) {
		code, body, err := binder.get("/readyz")
		if err != nil {
			return false, err
		}
		if code != 200 {
			return false, fmt.Errorf("/readyz %d: %s", code, strings.TrimSpace(body))
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}

	status := func(name string) (phase, reason string, failed int64) {
		u, err := brs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err.Error(), 0
		}
		phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
		reason, _, _ = unstructured.NestedString(u.Object, "status", "reason")
		failed, _, _ = unstructured.NestedInt64(u.Object, "status", "failedAttempts")
		return
	}
	waitPhase := func(name, want string, timeout time.Duration) {
		t.Helper()
		err := harness.Poll(ctx, timeout, "BindRequest "+name+" "+want, func(ctx context.Context) (bool, error) {
			phase, _, _ := status(name)
			return phase == want, nil
		})
		if err != nil {
			phase, reason, failed := status(name)
			t.Fatalf("%v; phase %q reason %q failedAttempts %d", err, phase, reason, failed)
		}
	}

	t.Run("fitting node: bound, Succeeded", func(t *testing.T) {
		pod := createPod("fits")
		if _, err := brs.Create(ctx, bindRequest(ns, "fits", pod, fit, 3), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPhase("fits", "Succeeded", 30*time.Second)
		got, err := pods.Get(ctx, "fits", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != fit {
			t.Errorf("pod bound to %q, want %q", got.Spec.NodeName, fit)
		}
		// KAI's binder marks every pod with what it received (here carried by the Binding).
		if got.Annotations[receivedTypeAnnoKey] != "Regular" {
			t.Errorf("pod annotations %v, want %s=Regular", got.Annotations, receivedTypeAnnoKey)
		}
		if _, reason, failed := status("fits"); reason != "" || failed != 0 {
			t.Errorf("a first-time success has reason %q, failedAttempts %d", reason, failed)
		}
		// KAI's PodBound condition, written off the bind path.
		err = harness.Poll(ctx, 30*time.Second, "pod condition PodBound", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, "fits", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == "PodBound" {
					if c.Status != corev1.ConditionTrue || c.Reason != "Bound" ||
						c.Message != "Pod bound successfully to node "+fit {
						return false, fmt.Errorf("PodBound condition %+v", c)
					}
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Error(err)
		}
	})

	t.Run("already bound: Succeeded without a second bind", func(t *testing.T) {
		pod := createPod("prebound")
		err := admin.Kube.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: fit}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := brs.Create(ctx, bindRequest(ns, "prebound", pod, fit, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPhase("prebound", "Succeeded", 30*time.Second)
	})

	t.Run("node missing: retried, then Failed", func(t *testing.T) {
		pod := createPod("stranded")
		const backoffLimit = 2
		if _, err := brs.Create(ctx, bindRequest(ns, "stranded", pod, missing, backoffLimit), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Retries wait 1 s, then 2 s.
		waitPhase("stranded", "Failed", 60*time.Second)
		_, reason, failed := status("stranded")
		if failed != backoffLimit+1 {
			t.Errorf("failedAttempts %d, want backoffLimit + 1 = %d", failed, backoffLimit+1)
		}
		if !strings.Contains(reason, "node "+missing+" not found") {
			t.Errorf("reason %q does not name the missing node", reason)
		}
		got, err := pods.Get(ctx, "stranded", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "" {
			t.Errorf("the pod was bound to %q", got.Spec.NodeName)
		}
		// One BindingError event per failed attempt: the retries happened.
		events, err := admin.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=stranded,reason=BindingError"})
		if err != nil {
			t.Fatal(err)
		}
		if len(events.Items) != backoffLimit+1 {
			t.Errorf("%d BindingError events, want %d", len(events.Items), backoffLimit+1)
		}
	})

	t.Run("metrics, healthz, readyz", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			code, body, err := binder.get(path)
			if err != nil || code != 200 {
				t.Errorf("%s: %d %q %v", path, code, body, err)
			}
		}
		code, body, err := binder.get("/metrics")
		if err != nil || code != 200 {
			t.Fatalf("/metrics: %d %v", code, err)
		}
		for _, want := range []string{
			"# TYPE controller_runtime_reconcile_total counter",
			"# TYPE controller_runtime_reconcile_time_seconds histogram",
			`controller_runtime_reconcile_time_seconds_bucket{controller="bindrequest",le="+Inf"}`,
			`controller_runtime_reconcile_errors_total{controller="bindrequest"}`,
			`controller_runtime_max_concurrent_reconciles{controller="bindrequest"} 2`,
			`controller_runtime_active_workers{controller="bindrequest"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		count := func(result string) float64 {
			re := regexp.MustCompile(`(?m)^controller_runtime_reconcile_total\{controller="bindrequest",result="` + result + `"\} (\S+)$`)
			m := re.FindStringSubmatch(body)
			if m == nil {
				t.Errorf("/metrics has no reconcile_total for result %s", result)
				return 0
			}
			v, _ := strconv.ParseFloat(m[1], 64)
			return v
		}
		if v := count("success"); v < 2 {
			t.Errorf("reconcile_total success = %v, want >= 2 (two requests succeeded)", v)
		}
		if v := count("error"); v < 3 {
			t.Errorf("reconcile_total error = %v, want >= 3 (three failed attempts)", v)
		}
	})

	// A second replica stands by (ready: it knows the leader) and binds nothing; when the leader
	// stops on SIGTERM it releases the lease, and the standby takes over.
	standby := startBinder(t, bin, "binder-e2e-standby.log")
	t.Cleanup(func() {
		standby.stop()
		if t.Failed() {
			t.Logf("standby binder log:\n%s", standby.Log())
		}
	})
	if err := harness.Poll(ctx, 30*time.Second, "standby /readyz 200", func(ctx context.Context) (bool, error) {
		code, _, err := standby.get("/readyz")
		return code == 200, err
	}); err != nil {
		t.Fatal(err)
	}
	holder := func() string {
		lease, err := admin.Kube.CoordinationV1().Leases(harness.Namespace).Get(ctx, "gantry-binder", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	if h := holder(); h != binder.identity {
		t.Fatalf("lease held by %q, want the first binder %q", h, binder.identity)
	}

	if code := binder.stop(); code != 0 {
		t.Errorf("the binder exited with %d after SIGTERM, want 0", code)
	}
	if err := harness.Poll(ctx, 30*time.Second, "the standby holds the lease", func(ctx context.Context) (bool, error) {
		return holder() == standby.identity, nil
	}); err != nil {
		t.Fatalf("%v (holder %q)", err, holder())
	}
	pod := createPod("after-failover")
	if _, err := brs.Create(ctx, bindRequest(ns, "after-failover", pod, fit, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPhase("after-failover", "Succeeded", 30*time.Second)

	// SIGTERM: a clean exit that releases the lease for a successor.
	if code := standby.stop(); code != 0 {
		t.Errorf("the standby exited with %d after SIGTERM, want 0", code)
	}
	if h := holder(); h != "" {
		t.Errorf("the lease is still held by %q after both binders stopped", h)
	}
}
