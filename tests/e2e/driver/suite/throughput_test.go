package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gantry/tests/e2e/driver/harness"
)

// cpuSeconds is utime + stime of a process from /proc/PID/stat.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which is in parentheses and may hold spaces).
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	const ticks = 100 // USER_HZ on Linux
	return (utime + stime) / ticks, nil
}

// controlPlanePids reads the apiserver's and etcd's process ids from DIR/env.
func controlPlanePids(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "APISERVER_PID":
			out["kube-apiserver"], _ = strconv.Atoi(v)
		case "ETCD_PID":
			out["etcd"], _ = strconv.Atoi(v)
		}
	}
	if data, err := os.ReadFile(filepath.Join(env.Dir, "kubelet.pid")); err == nil {
		out["fake kubelet"], _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	if out["kube-apiserver"] == 0 || out["etcd"] == 0 {
		t.Fatalf("no APISERVER_PID / ETCD_PID in %s/env", env.Dir)
	}
	return out
}

// Throughput (a benchmark: no timed assertion; CTest e2e.throughput at a reduced size and
// perf.e2e.throughput at the full one, both through tests/e2e/perf.sh):
// GANTRY_E2E_PERF_NODES fake nodes x 8 GPUs, GANTRY_E2E_PERF_PODS one-GPU pods in PodGroups of 1
// submitted at once; prints the time until all are bound (all that fit, when there are more pods
// than GPUs), pods/s, and the CPU seconds of the scheduler + binder against kube-apiserver + etcd
// (every 15 s while it runs, then at the end). Asserts that every pod that fits is bound exactly
// once (one node name ever, one BindRequest succeeded, for that node), that no node holds more
// GPUs than it has and that only the pods that do not fit are left pending. Skipped unless both
// are set.
func TestLiveThroughput(t *testing.T) {
	nodes, _ := strconv.Atoi(os.Getenv("GANTRY_E2E_PERF_NODES"))
	podCount, _ := strconv.Atoi(os.Getenv("GANTRY_E2E_PERF_PODS"))
	if nodes <= 0 || podCount <= 0 {
		t.Skip("GANTRY_E2E_PERF_NODES and GANTRY_E2E_PERF_PODS are not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	t.Cleanup(cancel)
	// The driver's own clients need far more than the default rate to submit at once.
	cfg, err := env.Config("admin")
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	fast, err := harness.NewClients("admin", cfg)
	if err != nil {
		t.Fatal(err)
	}
	existing, err := admin.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(existing.Items) > 0 {
		t.Skipf("needs a control plane without nodes; found %d", len(existing.Items))
	}
	id := suffix()
	parallel(t, 32, nodes, func(i int) error {
		_, err := harness.CreateGPUNode(ctx, fast, harness.GPUNode{Name: fmt.Sprintf("perf-%s-%04d", id, i), GPUs: 8})
		return err
	})
	t.Cleanup(func() {
		parallel(t, 32, nodes, func(i int) error {
			return fast.Kube.CoreV1().Nodes().Delete(context.Background(), fmt.Sprintf("perf-%s-%04d", id, i), metav1.DeleteOptions{})
		})
	})
	ns := newNamespace(t, ctx, "live-perf")
	t.Cleanup(func() {
		zero := int64(0)
		fast.Kube.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	queue := "perf-" + id
	createQueue(t, ctx, queue, 0)
	rec := newRecorder(t, ctx, fast.Kube, ns)

	sched := startScheduler(t, throughputClientLimits...)
	// Both processes run with their defaults, as deployed (the functional tests use 2 binder
	// workers).
	bind := liveBinderWorkers(t, "binder-live-perf.log", "", throughputClientLimits...)
	pids := controlPlanePids(t)
	pids["scheduler"], pids["binder"] = sched.cmd.Process.Pid, bind.cmd.Process.Pid
	cpu0 := map[string]float64{}
	for name, pid := range pids {
		if cpu0[name], err = cpuSeconds(pid); err != nil {
			t.Fatal(err)
		}
	}
	cpuNow := func() map[string]float64 {
		out := map[string]float64{}
		for name, pid := range pids {
			c, err := cpuSeconds(pid)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = c - cpu0[name]
		}
		return out
	}
	report := func(prefix string, bound int, elapsed time.Duration) {
		cpu := cpuNow()
		ours, theirs := cpu["scheduler"]+cpu["binder"], cpu["kube-apiserver"]+cpu["etcd"]
		ratio := 0.0
		if theirs > 0 {
			ratio = 100 * ours / theirs
		}
		t.Logf("%s %d pods bound after %s, %.1f pods/s; cpu seconds: scheduler %.1f + binder %.1f = %.1f; "+
			"kube-apiserver %.1f + etcd %.1f = %.1f (ours %.1f%% of theirs); fake kubelet %.1f", prefix, bound,
			elapsed.Round(time.Millisecond), float64(bound)/elapsed.Seconds(),
			cpu["scheduler"], cpu["binder"], ours, cpu["kube-apiserver"], cpu["etcd"], theirs, ratio,
			cpu["fake kubelet"])
	}
	// Pods beyond the cluster's GPUs stay pending; the clock stops when all that fit are bound.
	fit := podCount
	if nodes*8 < fit {
		fit = nodes * 8
	}
	start := time.Now()
	parallel(t, 32, podCount, func(i int) error {
		return submitGang(ctx, fast, ns, fmt.Sprintf("p%05d", i), queue, 1, 1)
	})
	t.Logf("THROUGHPUT nodes=%d gpus=%d pods=%d (%d fit): submitted in %s", nodes, nodes*8, podCount, fit,
		time.Since(start).Round(time.Millisecond))
	lastReport := time.Now()
	err = harness.Poll(ctx, 55*time.Minute, fmt.Sprintf("%d pods bound", fit), func(context.Context) (bool, error) {
		if time.Since(lastReport) >= 15*time.Second {
			report("progress:", rec.boundCount(), time.Since(start))
			lastReport = time.Now()
		}
		return rec.boundCount() >= fit, nil
	})
	if err != nil {
		t.Fatalf("%v: %d bound", err, rec.boundCount())
	}
	report("THROUGHPUT all", rec.boundCount(), time.Since(start))
	// The binder marks a request Succeeded after the bind: wait for the last status writes, then
	// check the history.
	err = harness.Poll(ctx, 2*time.Minute, "BindRequests of the bound pods succeeded", func(context.Context) (bool, error) {
		return rec.succeededCount() >= fit, nil
	})
	if err != nil {
		t.Errorf("%v: %d", err, rec.succeededCount())
	}
	gpusOf := map[string]int64{}
	for i := 0; i < nodes; i++ {
		gpusOf[fmt.Sprintf("perf-%s-%04d", id, i)] = 8
	}
	pending := rec.checkAllBoundOnce(t, ctx, fast, ns, gpusOf)
	if pending != podCount-fit {
		t.Errorf("%d pods pending; want %d (%d pods, %d GPUs)", pending, podCount-fit, podCount, nodes*8)
	}
	if fit < podCount {
		t.Logf("%d pods pending (they do not fit)", pending)
	}
	// The scheduler's account of its watch cache (objects converted, full assemblies, patches),
	// printed when it stops.
	// Also the cycles that placed pods: how many, and the time they spent taking the snapshot,
	// deciding and writing (from the scheduler's "cycle N: ..." log lines).
	sched.stop(t)
	cycles := 0
	var snapMs, decideMs, writeMs float64
	for _, line := range strings.Split(sched.output(), "\n") {
		if strings.Contains(line, "watch cache:") {
			t.Logf("scheduler %s", strings.TrimSpace(line))
		}
		if i := strings.Index(line, "; snapshot in "); i >= 0 && strings.Contains(line, " binds, ") {
			var a, b, c float64
			if _, err := fmt.Sscanf(line[i:], "; snapshot in %f ms, decided in %f ms, written in %f ms", &a, &b, &c); err == nil {
				cycles++
				snapMs, decideMs, writeMs = snapMs+a, decideMs+b, writeMs+c
			}
		}
	}
	t.Logf("scheduler: %d cycles placed pods; in all %.0f ms taking snapshots, %.0f ms deciding, %.0f ms writing",
		cycles, snapMs, decideMs, writeMs)
}

// succeededCount is the number of BindRequests seen reaching Succeeded.
func (r *recorder) succeededCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.brs {
		if h.reached("Succeeded") {
			n++
		}
	}
	return n
}

// checkAllBoundOnce is checkBoundOnce for every pod of the namespace, from one List (many pods):
// each bound pod had exactly one node name ever, was never deleted, and exactly one BindRequest
// for it succeeded, for that node; no node holds more GPUs than it has, and every pod is on a
// node of `gpusOf`. Returns the number of pods not bound.
func (r *recorder) checkAllBoundOnce(t *testing.T, ctx context.Context, c *harness.Clients, ns string, gpusOf map[string]int64) int {
	t.Helper()
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	succeeded := map[string][]string{} // pod -> nodes of its succeeded requests
	for _, h := range r.brs {
		if h.reached("Succeeded") {
			succeeded[h.pod] = append(succeeded[h.pod], h.node)
		}
	}
	perNodeGPUs := map[string]int64{}
	pending, errs := 0, 0
	fail := func(format string, args ...interface{}) {
		if errs++; errs <= 20 {
			t.Errorf(format, args...)
		}
	}
	for _, p := range pods.Items {
		node := p.Spec.NodeName
		if node == "" {
			pending++
			if len(succeeded[p.Name]) > 0 {
				fail("pod %s is not bound, but a BindRequest for it succeeded", p.Name)
			}
			continue
		}
		if r.podGone[p.Name] {
			fail("pod %s was deleted", p.Name)
		}
		if seen := r.podNodes[p.Name]; len(seen) != 1 || seen[0] != node {
			fail("pod %s: node names seen %v, now %q; want exactly one", p.Name, seen, node)
		}
		if s := succeeded[p.Name]; len(s) != 1 || s[0] != node {
			fail("pod %s on %s: BindRequests succeeded for nodes %v; want exactly one, for its node", p.Name, node, s)
		}
		perNodeGPUs[node] += r.podGPUs[p.Name]
	}
	for node, used := range perNodeGPUs {
		if capacity, ok := gpusOf[node]; !ok {
			fail("pods bound to %q, not a node of the test", node)
		} else if used > capacity {
			fail("node %s: %d GPUs of bound pods; it has %d", node, used, capacity)
		}
	}
	if errs > 20 {
		t.Errorf("... %d problems in all", errs)
	}
	t.Logf("checked %d pods: %d bound exactly once, no node over its GPUs; %d pending", len(pods.Items),
		len(pods.Items)-pending, pending)
	return pending
}

// parallel runs f(0..n-1) on `workers` goroutines and fails the test on the first error.
func parallel(t *testing.T, workers, n int, f func(int) error) {
	t.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
					for range next {
					}
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// throughputClientLimits are the API client limits the throughput tests run the scheduler and the
// binder with: a deployment's choice for a large cluster, above KAI's defaults (50 / 300), which
// would make the tests measure the client-side rate limiter.
var throughputClientLimits = []string{"--qps", "200", "--burst", "400"}
