package suite

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"gantry/tests/e2e/driver/harness"
)

// The live mode end to end: `gantry scheduler` and `gantry binder` run together as separate
// processes under their own users (deploy/'s RBAC), with the fake kubelet running what they bind.
// Like TestLiveScheduler*, these tests need a control plane whose only nodes are the ones they
// create (CTest: e2e.live on the e2e.sched.up control plane).

// liveBinder starts `gantry binder` and stops it (SIGTERM, exit 0 expected) when the test ends.
func liveBinder(t *testing.T, logName string) *binderProcess {
	t.Helper()
	return liveBinderWorkers(t, logName, "2")
}

// liveBinderWorkers is liveBinder with `workers` reconcile workers ("": the product's default).
func liveBinderWorkers(t *testing.T, logName, workers string, extra ...string) *binderProcess {
	t.Helper()
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	p := startBinderWorkers(t, bin, logName, workers, extra...)
	t.Cleanup(func() {
		if code := p.stop(); code != 0 && !p.killed {
			t.Errorf("binder %d exited with %d after SIGTERM", p.cmd.Process.Pid, code)
		}
		if t.Failed() {
			t.Logf("binder %d log:\n%s", p.cmd.Process.Pid, p.Log())
		}
	})
	return p
}

// brHistory is what a watch saw of one BindRequest object (one uid).
type brHistory struct {
	pod, node      string
	phases         []string // distinct phases in the order seen ("" for none yet)
	failedAttempts int64
	deleted        bool
}

func (h *brHistory) reached(phase string) bool {
	for _, p := range h.phases {
		if p == phase {
			return true
		}
	}
	return false
}

// recorder watches a namespace's pods and BindRequests from the start and keeps their history:
// every node name a pod was seen with, pod deletions, and every BindRequest by uid.
type recorder struct {
	mu       sync.Mutex
	podNodes map[string][]string // distinct non-empty nodeName values, in order
	podGone  map[string]bool
	podGPUs  map[string]int64
	running  map[string]bool
	brs      map[types.UID]*brHistory
	bound    int              // pods with a nodeName
	podCPU   map[string]int64 // millicores requested
	changes  []podChange      // each pod's first binding and its deletion, in watch order
	// BindRequests a caller found by listing before the watch delivered them (TestFaultSchedules).
	unwatched int
}

// podChange is a pod bound to a node (first seen with it) or deleted.
type podChange struct {
	pod, node string
	deleted   bool
}

func newRecorder(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns string) *recorder {
	t.Helper()
	r := &recorder{podNodes: map[string][]string{}, podGone: map[string]bool{}, podGPUs: map[string]int64{},
		running: map[string]bool{}, brs: map[types.UID]*brHistory{}, podCPU: map[string]int64{}}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	// Each kind: a list, then a watch from its resourceVersion. A watch the server ends for good
	// (410 Gone: a restarted kube-apiserver's watch cache starts at its own list) is followed by a
	// relist, whose items are delivered as modified and whose absentees as deleted, and a new watch.
	start := func(what string, list func(context.Context) (string, []runtime.Object, error),
		w func(context.Context, metav1.ListOptions) (watch.Interface, error), on func(watch.Event)) {
		rv, _, err := list(ctx)
		if err != nil {
			t.Fatalf("list %s: %v", what, err)
		}
		lw := &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return w(ctx, o) }}
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
		if err != nil {
			t.Fatalf("watch %s: %v", what, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			known := map[types.UID]runtime.Object{}
			deliver := func(ev watch.Event) {
				if ev.Type == watch.Error {
					t.Logf("watch of %s: %v", what, apierrors.FromObject(ev.Object))
					return
				}
				if m, err := apimeta.Accessor(ev.Object); err == nil && m.GetUID() != "" {
					if ev.Type == watch.Deleted {
						delete(known, m.GetUID())
					} else {
						known[m.GetUID()] = ev.Object
					}
				}
				on(ev)
			}
			for {
				select {
				case <-ctx.Done():
					rw.Stop()
					return
				case ev, ok := <-rw.ResultChan():
					if ok {
						deliver(ev)
						continue
					}
				}
				rw.Stop()
				var items []runtime.Object
				if harness.Poll(ctx, 5*time.Minute, "relist "+what, func(ctx context.Context) (bool, error) {
					var err error
					rv, items, err = list(ctx)
					return err == nil, err
				}) != nil {
					return
				}
				listed := map[types.UID]bool{}
				for _, o := range items {
					if m, err := apimeta.Accessor(o); err == nil {
						listed[m.GetUID()] = true
					}
					deliver(watch.Event{Type: watch.Modified, Object: o})
				}
				for uid, o := range known {
					if !listed[uid] {
						deliver(watch.Event{Type: watch.Deleted, Object: o})
					}
				}
				if rw, err = watchtools.NewRetryWatcherWithContext(ctx, rv, lw); err != nil {
					return
				}
			}
		}()
	}
	pods := kube.CoreV1().Pods(ns)
	firstPods := true
	start("pods", func(ctx context.Context) (string, []runtime.Object, error) {
		l, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", nil, err
		}
		if firstPods && len(l.Items) > 0 {
			return "", nil, fmt.Errorf("namespace %s already has pods", ns)
		}
		firstPods = false
		var items []runtime.Object
		for i := range l.Items {
			items = append(items, &l.Items[i])
		}
		return l.ResourceVersion, items, nil
	}, pods.Watch, func(ev watch.Event) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if q, ok := p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]; ok {
			r.podGPUs[p.Name] = q.Value()
		}
		if q, ok := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; ok {
			r.podCPU[p.Name] = q.MilliValue()
		}
		if ev.Type == watch.Deleted {
			if !r.podGone[p.Name] {
				r.changes = append(r.changes, podChange{pod: p.Name, node: p.Spec.NodeName, deleted: true})
			}
			r.podGone[p.Name] = true
			return
		}
		if n := p.Spec.NodeName; n != "" {
			seen := r.podNodes[p.Name]
			if len(seen) == 0 {
				r.bound++
				r.changes = append(r.changes, podChange{pod: p.Name, node: n})
			}
			if len(seen) == 0 || seen[len(seen)-1] != n {
				r.podNodes[p.Name] = append(seen, n)
			}
		}
		if p.Status.Phase == corev1.PodRunning {
			r.running[p.Name] = true
		}
	})
	brs := admin.Dynamic.Resource(bindRequestGVR).Namespace(ns)
	start("BindRequests", func(ctx context.Context) (string, []runtime.Object, error) {
		l, err := brs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", nil, err
		}
		var items []runtime.Object
		for i := range l.Items {
			items = append(items, &l.Items[i])
		}
		return l.GetResourceVersion(), items, nil
	}, brs.Watch, func(ev watch.Event) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		h := r.brs[u.GetUID()]
		if h == nil {
			h = &brHistory{}
			h.pod, _, _ = unstructured.NestedString(u.Object, "spec", "podName")
			h.node, _, _ = unstructured.NestedString(u.Object, "spec", "selectedNode")
			r.brs[u.GetUID()] = h
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if len(h.phases) == 0 || h.phases[len(h.phases)-1] != phase {
			h.phases = append(h.phases, phase)
		}
		if n, ok, _ := unstructured.NestedInt64(u.Object, "status", "failedAttempts"); ok && n > h.failedAttempts {
			h.failedAttempts = n
		}
		if ev.Type == watch.Deleted {
			h.deleted = true
		}
	})
	return r
}

func (r *recorder) boundCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bound
}

func (r *recorder) bindRequestCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.brs)
}

// requestsFor copies the histories of the pod's BindRequests (in no particular order).
func (r *recorder) requestsFor(pod string) []*brHistory {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*brHistory
	for _, h := range r.brs {
		if h.pod == pod {
			c := *h
			c.phases = append([]string{}, h.phases...)
			out = append(out, &c)
		}
	}
	return out
}

// checkBoundOnce asserts every pod named was bound exactly once, to a node that exists, was never
// deleted, and that no BindRequest succeeded for it on another node or more than once; and that no
// node holds more GPUs than it has. Returns pods per node.
func (r *recorder) checkBoundOnce(t *testing.T, ctx context.Context, ns string, pods []string, gpusOf map[string]int64) map[string]int {
	t.Helper()
	perNodeGPUs := map[string]int64{}
	perNode := map[string]int{}
	for _, name := range pods {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("pod %s: %v", name, err)
			continue
		}
		r.mu.Lock()
		seen, gone := append([]string{}, r.podNodes[name]...), r.podGone[name]
		r.mu.Unlock()
		if gone {
			t.Errorf("pod %s was deleted", name)
		}
		if len(seen) != 1 || seen[0] != p.Spec.NodeName {
			t.Errorf("pod %s: node names seen %v, now %q; want exactly one", name, seen, p.Spec.NodeName)
		}
		succeeded := 0
		for _, h := range r.requestsFor(name) {
			if h.reached("Succeeded") {
				succeeded++
				if h.node != p.Spec.NodeName {
					t.Errorf("pod %s: a BindRequest for node %s succeeded, but the pod is on %q", name, h.node, p.Spec.NodeName)
				}
			}
		}
		if succeeded != 1 {
			t.Errorf("pod %s: %d BindRequests succeeded, want 1", name, succeeded)
		}
		perNodeGPUs[p.Spec.NodeName] += r.podGPUs[name]
		perNode[p.Spec.NodeName]++
	}
	for node, used := range perNodeGPUs {
		if capacity, ok := gpusOf[node]; !ok {
			t.Errorf("%d pods bound to %q, not a node of the test", perNode[node], node)
		} else if used > capacity {
			t.Errorf("node %s: %d GPUs of bound pods; it has %d", node, used, capacity)
		}
	}
	return perNode
}

// A pod's BindRequest names a node that is deleted before the binder gets to it. Deterministic
// order: the scheduler runs alone and writes the request (one node exists); it is stopped; a
// second node is created and the first deleted; the binder starts, retries the request until its
// backoff limit and marks it Failed (the scheduler, had it been running, would already have
// deleted a request whose node is gone); the scheduler starts again, deletes the failed request
// and asks for the other node in a later cycle; the binder binds it there, exactly once.
func TestLiveNodeGone(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	doomed, spare := "gone-a-"+id, "gone-b-"+id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: doomed, GPUs: 4})
	ns := newNamespace(t, ctx, "live-gone")
	cleanupPods(t, ns)
	rec := newRecorder(t, ctx, admin.Kube, ns)
	queue := "train-" + id
	createQueue(t, ctx, queue, 0)

	first := startScheduler(t)
	pods := createGang(t, ctx, ns, "one", queue, 1, 1, 2)
	br := waitBindRequests(t, ctx, ns, pods)[pods[0]]
	if node, _, _ := unstructured.NestedString(br.Object, "spec", "selectedNode"); node != doomed {
		t.Fatalf("BindRequest for node %q, want %q (the only node)", node, doomed)
	}
	first.stop(t)

	if _, err := harness.CreateGPUNode(ctx, admin, harness.GPUNode{Name: spare, GPUs: 4}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Kube.CoreV1().Nodes().Delete(context.Background(), spare, metav1.DeleteOptions{}) })
	if err := admin.Kube.CoreV1().Nodes().Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	liveBinder(t, "binder-live-gone.log")
	backoff, _, _ := unstructured.NestedInt64(br.Object, "spec", "backoffLimit")
	err := harness.Poll(ctx, 60*time.Second, "the binder marks the request Failed", func(ctx context.Context) (bool, error) {
		for _, h := range rec.requestsFor(pods[0]) {
			if h.reached("Failed") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("binder gave up %s after it started", time.Since(start).Round(time.Millisecond))
	// The binder posts its events best effort, beside the status writes: the last one may arrive
	// after the request is marked Failed, so the count is read once it stops growing short.
	var events *corev1.EventList
	err = harness.Poll(ctx, 15*time.Second, "the BindingError events", func(ctx context.Context) (bool, error) {
		list, err := admin.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + pods[0] + ",reason=BindingError"})
		if err != nil {
			return false, err
		}
		events = list
		return int64(len(list.Items)) >= backoff+1, nil
	})
	if err != nil && events == nil {
		t.Fatal(err)
	}
	if int64(len(events.Items)) != backoff+1 {
		t.Errorf("%d BindingError events, want backoffLimit + 1 = %d (the retries)", len(events.Items), backoff+1)
	}
	for _, e := range events.Items {
		if !strings.Contains(e.Message, "node "+doomed+" not found") {
			t.Errorf("BindingError %q does not name the missing node", e.Message)
		}
	}

	start = time.Now()
	startScheduler(t)
	err = harness.Poll(ctx, 60*time.Second, pods[0]+" bound to "+spare, func(ctx context.Context) (bool, error) {
		p, err := admin.Kube.CoreV1().Pods(ns).Get(ctx, pods[0], metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bound %s after the scheduler restarted", time.Since(start).Round(time.Millisecond))
	waitRunning(t, ctx, ns, pods)
	rec.checkBoundOnce(t, ctx, ns, pods, map[string]int64{spare: 4})

	hs := rec.requestsFor(pods[0])
	if len(hs) != 2 {
		t.Fatalf("%d BindRequests for %s, want 2 (the failed one and its replacement)", len(hs), pods[0])
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].node == doomed })
	old, repl := hs[0], hs[1]
	if old.node != doomed || !old.reached("Failed") || old.reached("Succeeded") || old.failedAttempts != backoff+1 || !old.deleted {
		t.Errorf("first request: node %s phases %v failedAttempts %d deleted %v; want %s, Failed after %d attempts, deleted by the scheduler",
			old.node, old.phases, old.failedAttempts, old.deleted, doomed, backoff+1)
	}
	if repl.node != spare || !repl.reached("Succeeded") || repl.reached("Failed") {
		t.Errorf("second request: node %s phases %v; want %s, Succeeded", repl.node, repl.phases, spare)
	}
}

// Crashes: 200 pods in 100 gangs (60 of 2 pods x 1 GPU, 40 of 2 pods x 2 GPUs) stream in over a
// few seconds while the scheduler and the binder are each killed (SIGKILL: no lease released, the
// successor waits for it to expire) and restarted three times, at points chosen by progress. All of it
// fits with room to spare (40 nodes x 8 GPUs for 280 GPUs requested); at the end every pod is bound
// exactly once, no node is over its GPUs, and nothing is left pending.
func TestLiveRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	id := suffix()
	const nodes, gpusPerNode = 40, 8
	var nodeList []harness.GPUNode
	gpusOf := map[string]int64{}
	for i := 0; i < nodes; i++ {
		n := harness.GPUNode{Name: fmt.Sprintf("crash-%s-%02d", id, i), GPUs: gpusPerNode}
		nodeList = append(nodeList, n)
		gpusOf[n.Name] = gpusPerNode
	}
	exclusiveNodes(t, ctx, nodeList...)
	namespace := newNamespace(t, ctx, "live-crash")
	cleanupPods(t, namespace)
	rec := newRecorder(t, ctx, admin.Kube, namespace)
	queue := "train-" + id
	createQueue(t, ctx, queue, 0)

	start := time.Now()
	sched := startScheduler(t)
	bind := liveBinder(t, "binder-live-crash-0.log")

	// The pods stream in: one gang every 60 ms (about 6 s), from a goroutine.
	type gang struct {
		name string
		gpus int64
	}
	var gangs []gang
	for i := 0; i < 100; i++ {
		g := gang{fmt.Sprintf("g%03d", i), 1}
		if i%5 >= 3 {
			g.gpus = 2
		}
		gangs = append(gangs, g)
	}
	var all []string
	for _, g := range gangs {
		all = append(all, g.name+"-0", g.name+"-1")
	}
	submitted := make(chan error, 1)
	go func() {
		tick := time.NewTicker(60 * time.Millisecond)
		defer tick.Stop()
		for _, g := range gangs {
			<-tick.C
			if err := submitGang(ctx, admin, namespace, g.name, queue, 2, g.gpus); err != nil {
				submitted <- err
				return
			}
		}
		submitted <- nil
	}()

	// Kills at points of progress: each waits for the pipeline to have moved on since the last.
	binderLogs := 0
	killScheduler := func(afterRequests int) {
		t.Helper()
		err := harness.Poll(ctx, 90*time.Second, fmt.Sprintf("%d BindRequests", afterRequests), func(context.Context) (bool, error) {
			return rec.bindRequestCount() >= afterRequests, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sched.kill()
		t.Logf("%s: killed the scheduler at %d BindRequests, %d pods bound", time.Since(start).Round(time.Millisecond),
			rec.bindRequestCount(), rec.boundCount())
		sched = startScheduler(t)
	}
	killBinder := func(afterBound int) {
		t.Helper()
		err := harness.Poll(ctx, 90*time.Second, fmt.Sprintf("%d pods bound", afterBound), func(context.Context) (bool, error) {
			return rec.boundCount() >= afterBound, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		bind.kill()
		t.Logf("%s: killed the binder at %d BindRequests, %d pods bound", time.Since(start).Round(time.Millisecond),
			rec.bindRequestCount(), rec.boundCount())
		binderLogs++
		bind = liveBinder(t, fmt.Sprintf("binder-live-crash-%d.log", binderLogs))
	}
	killScheduler(30)
	killBinder(20)
	killScheduler(110)
	killBinder(90)
	killScheduler(170)
	killBinder(150)
	if err := <-submitted; err != nil {
		t.Fatalf("submitting pods: %v", err)
	}

	err := harness.Poll(ctx, 4*time.Minute, "all 200 pods bound and running", func(context.Context) (bool, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.bound == len(all) && len(rec.running) == len(all), nil
	})
	if err != nil {
		t.Fatalf("%v: %d bound, %d BindRequests", err, rec.boundCount(), rec.bindRequestCount())
	}
	t.Logf("%s: all %d pods bound and running (%d BindRequests)", time.Since(start).Round(time.Millisecond),
		len(all), rec.bindRequestCount())
	perNode := rec.checkBoundOnce(t, ctx, namespace, all, gpusOf)
	t.Logf("pods per node: %v", perNode)
	if h := rec.bindRequestCount(); h < len(all) {
		t.Errorf("%d BindRequests seen for %d pods", h, len(all))
	}
	// Nothing is pending (no pods other than the test's exist in the namespace).
	pods, err := admin.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			t.Errorf("pod %s is pending", p.Name)
		}
	}
}

// submitGang creates a PodGroup and its pods (no testing.T: it runs on other goroutines).
func submitGang(ctx context.Context, c *harness.Clients, ns, name, queue string, pods int, gpus int64) error {
	pg := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
		"metadata": map[string]interface{}{"name": name, "namespace": ns,
			"labels": map[string]interface{}{"kai.scheduler/queue": queue}},
		"spec": map[string]interface{}{"minMember": int64(pods), "queue": queue},
	}}
	if _, err := c.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create podgroup %s: %w", name, err)
	}
	for i := 0; i < pods; i++ {
		pod := pendingPod(fmt.Sprintf("%s-%d", name, i), gpus)
		pod.Labels["kai.scheduler/queue"] = queue
		pod.Annotations = map[string]string{"pod-group-name": name}
		if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
	}
	return nil
}
