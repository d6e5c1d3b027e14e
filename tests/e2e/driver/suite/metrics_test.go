package suite

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gantry/tests/e2e/driver/harness"
)

// KAI's scheduler metrics on /metrics after cycles that bind, consolidate and preempt: every
// family of KAI's docs/metrics (v0.17) that Gantry exports is there under the default metrics
// namespace "kai", and the ones the cycles did something for are non-zero; the search budgets
// are KAI's defaults. (Not exported, see docs/metrics.md: scenario_search_duration_seconds,
// scenario_search_scenarios_total, which need per-generator scenarios;
// scenario_search_action_budget_exhausted_total appears once a budget binds.)
//
// Two nodes of 4 GPUs. Two one-GPU pods run one on each node (created bound), so a 4-GPU job
// fits only once one of them moves: consolidation evicts it (its pod is re-placed on the other
// node in the simulation; no controller re-creates it here), and the 4-GPU job is bound. A 3-GPU
// job then fills the cluster; a non-preemptible 2-GPU job of higher priority in the same queue
// preempts.
func TestLiveSchedulerMetrics(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	n1, n2 := "metrics-a-"+id, "metrics-b-"+id
	exclusiveNodes(t, ctx, harness.GPUNode{Name: n1, GPUs: 4}, harness.GPUNode{Name: n2, GPUs: 4})
	ns := newNamespace(t, ctx, "sched-metrics")
	cleanupPods(t, ns)
	queue := "metrics-" + id
	createQueue(t, ctx, queue, 8)
	low, high := "metrics-low-"+id, "metrics-high-"+id
	createPriorityClass(t, ctx, low, 50)
	createPriorityClass(t, ctx, high, 100)

	// Two one-GPU pods already running, one per node.
	var frags []string
	for i, node := range []string{n1, n2} {
		name := fmt.Sprintf("frag%d", i)
		createRankedPodGroup(t, ctx, ns, name, queue, low, "preemptible")
		pod := pendingPod(name+"-0", 1)
		pod.Labels["kai.scheduler/queue"] = queue
		pod.Annotations = map[string]string{"pod-group-name": name}
		pod.Spec.NodeName = node
		if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
		frags = append(frags, pod.Name)
	}
	waitRunning(t, ctx, ns, frags)
	sched := startScheduler(t)

	// Consolidation: the 4-GPU job fits once a one-GPU pod has gone.
	whole := createRankedGang(t, ctx, ns, "whole", queue, low, "preemptible", 4)
	waitGone(t, ctx, ns, frags, 1)
	playBinder(t, ctx, ns, waitBindRequests(t, ctx, ns, whole))
	waitRunning(t, ctx, ns, whole)

	// Allocation fills the cluster, then preemption makes room for the higher priority job.
	filler := createRankedGang(t, ctx, ns, "filler", queue, low, "preemptible", 3)
	playBinder(t, ctx, ns, waitBindRequests(t, ctx, ns, filler))
	waitRunning(t, ctx, ns, filler)
	preemptor := createRankedGang(t, ctx, ns, "preemptor", queue, high, "non-preemptible", 2)
	waitBindRequests(t, ctx, ns, preemptor)

	// The counters are added once a cycle's decisions are written: the cycle that created the
	// preemptor's BindRequest has done so before the next scrape shows it; poll briefly.
	port := sched.port(t)
	var metrics string
	harness.Poll(ctx, 10*time.Second, "preempt counted", func(ctx context.Context) (bool, error) {
		_, metrics = httpGet(t, port, "/metrics")
		return sampleValue(metrics, `kai_total_preemption_attempts`) > 0, nil
	})

	qLabels := fmt.Sprintf(`{queue_name=%q,queue_metadata_name=%q,queue_display_name=""}`, queue, queue)
	type family struct {
		name    string
		kind    string
		nonZero []string // samples (name and labels) whose value must be > 0
		present []string // samples that must be there, whatever their value
	}
	families := []family{
		{"e2e_scheduling_latency_milliseconds", "gauge", nil, []string{"kai_e2e_scheduling_latency_milliseconds"}},
		{"open_session_latency_milliseconds", "gauge", nil, []string{"kai_open_session_latency_milliseconds"}},
		{"close_session_latency_milliseconds", "gauge", nil, []string{"kai_close_session_latency_milliseconds"}},
		{"plugin_scheduling_latency_milliseconds", "gauge", nil, []string{
			`kai_plugin_scheduling_latency_milliseconds{plugin="proportion",OnSession="OnSessionOpen"}`,
			`kai_plugin_scheduling_latency_milliseconds{plugin="proportion",OnSession="OnSessionClose"}`}},
		{"action_scheduling_latency_milliseconds", "gauge", nil, []string{
			`kai_action_scheduling_latency_milliseconds{action="allocate"}`,
			`kai_action_scheduling_latency_milliseconds{action="consolidation"}`,
			`kai_action_scheduling_latency_milliseconds{action="preempt"}`}},
		{"task_scheduling_latency_milliseconds", "histogram", []string{"kai_task_scheduling_latency_milliseconds_count"}, nil},
		{"task_bind_latency_milliseconds", "histogram", []string{"kai_task_bind_latency_milliseconds_count"}, nil},
		{"usage_query_latency_milliseconds", "histogram", nil, []string{"kai_usage_query_latency_milliseconds_count"}},
		{"podgroups_scheduled_by_action", "counter", []string{
			`kai_podgroups_scheduled_by_action{action="allocate"}`,
			`kai_podgroups_scheduled_by_action{action="consolidation"}`,
			`kai_podgroups_scheduled_by_action{action="preempt"}`}, nil},
		{"podgroups_acted_on_by_action", "counter", []string{
			`kai_podgroups_acted_on_by_action{action="consolidation"}`,
			`kai_podgroups_acted_on_by_action{action="preempt"}`}, nil},
		{"scenarios_simulation_by_action", "counter", []string{
			`kai_scenarios_simulation_by_action{action="consolidation"}`,
			`kai_scenarios_simulation_by_action{action="preempt"}`}, nil},
		{"scenarios_filtered_by_action", "counter", nil, []string{
			`kai_scenarios_filtered_by_action{action="consolidation"}`,
			`kai_scenarios_filtered_by_action{action="preempt"}`}},
		{"total_preemption_attempts", "counter", []string{"kai_total_preemption_attempts"}, nil},
		{"scenario_search_jobs_total", "counter", []string{
			`kai_scenario_search_jobs_total{action="consolidation",result="solved",reduced_budget="false"}`,
			`kai_scenario_search_jobs_total{action="preempt",result="solved",reduced_budget="false"}`}, nil},
		{"scenario_search_action_budget_configured_seconds", "gauge", []string{
			`kai_scenario_search_action_budget_configured_seconds{action="consolidation"}`,
			`kai_scenario_search_action_budget_configured_seconds{action="preempt"}`}, nil},
		{"scenario_search_job_budget_configured_seconds", "gauge", []string{"kai_scenario_search_job_budget_configured_seconds"}, nil},
		{"scenario_search_generator_budget_configured_seconds", "gauge", []string{
			`kai_scenario_search_generator_budget_configured_seconds{generator="NodeLocalGreedy"}`,
			`kai_scenario_search_generator_budget_configured_seconds{generator="MultiNodeGang"}`}, nil},
		{"queue_fair_share_cpu_cores", "gauge", nil, []string{"kai_queue_fair_share_cpu_cores" + qLabels}},
		{"queue_fair_share_memory_gb", "gauge", nil, []string{"kai_queue_fair_share_memory_gb" + qLabels}},
		{"queue_fair_share_gpu", "gauge", []string{"kai_queue_fair_share_gpu" + qLabels}, nil},
		{"queue_cpu_usage", "gauge", nil, []string{"kai_queue_cpu_usage" + qLabels}},
		{"queue_memory_usage", "gauge", nil, []string{"kai_queue_memory_usage" + qLabels}},
		{"queue_gpu_usage", "gauge", nil, []string{"kai_queue_gpu_usage" + qLabels}},
	}
	for _, f := range families {
		if !strings.Contains(metrics, "# TYPE kai_"+f.name+" "+f.kind+"\n") {
			t.Errorf("/metrics has no %s kai_%s", f.kind, f.name)
		}
		for _, s := range f.present {
			if sampleValue(metrics, s) < 0 {
				t.Errorf("/metrics has no sample %s", s)
			}
		}
		for _, s := range f.nonZero {
			if v := sampleValue(metrics, s); v <= 0 {
				t.Errorf("%s = %v, want > 0 after the cycles", s, v)
			}
		}
	}
	// pod_group_evicted_pods_total: one pod by consolidation (either one-GPU pod) and at least
	// one by preempt, in the default node pool.
	for _, action := range []string{"consolidation", "preempt"} {
		re := regexp.MustCompile(`(?m)^kai_pod_group_evicted_pods_total\{podgroup="[^"]+",namespace="` + ns +
			`",uid="[^"]+",nodepool="default",action="` + action + `"\} (\S+)$`)
		if m := re.FindStringSubmatch(metrics); m == nil {
			t.Errorf("/metrics has no kai_pod_group_evicted_pods_total for action %s", action)
		}
	}
	if strings.Contains(metrics, "\ne2e_scheduling_latency_milliseconds") {
		t.Errorf("the scheduler's families are also exported without the kai_ prefix")
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", metrics)
	} else {
		for _, line := range strings.Split(metrics, "\n") {
			if strings.HasPrefix(line, "kai_") && (strings.Contains(line, "_by_action") ||
				strings.Contains(line, "evicted") || strings.Contains(line, "preemption") ||
				strings.Contains(line, "search_jobs") || strings.HasSuffix(strings.Fields(line)[0], "_count")) {
				t.Log(line)
			}
		}
	}
}

// sampleValue is the value of the sample line that starts with `sample` followed by a space
// (-1 when there is none).
func sampleValue(metrics, sample string) float64 {
	for _, line := range strings.Split(metrics, "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				return -1
			}
			return v
		}
	}
	return -1
}

func createPriorityClass(t *testing.T, ctx context.Context, name string, value int32) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if _, err := admin.Kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PriorityClass %s: %v", name, err)
	}
	t.Cleanup(func() {
		admin.Kube.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// createRankedPodGroup creates a one-member PodGroup with a priority class and preemptibility.
func createRankedPodGroup(t *testing.T, ctx context.Context, ns, name, queue, priorityClass, preemptibility string) {
	t.Helper()
	pg := obj(t, fmt.Sprintf(`
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: %s, namespace: %s, labels: {kai.scheduler/queue: %s}}
spec: {minMember: 1, queue: %s, priorityClassName: %s, preemptibility: %s}
`, name, ns, queue, queue, priorityClass, preemptibility))
	if _, err := admin.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create podgroup %s: %v", name, err)
	}
}

// createRankedGang creates such a PodGroup and its one pod asking for `gpus` GPUs.
func createRankedGang(t *testing.T, ctx context.Context, ns, name, queue, priorityClass, preemptibility string, gpus int64) []string {
	t.Helper()
	createRankedPodGroup(t, ctx, ns, name, queue, priorityClass, preemptibility)
	pod := pendingPod(name+"-0", gpus)
	pod.Labels["kai.scheduler/queue"] = queue
	pod.Annotations = map[string]string{"pod-group-name": name}
	if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	return []string{pod.Name}
}

// waitGone waits until `n` of the pods named no longer exist.
func waitGone(t *testing.T, ctx context.Context, ns string, pods []string, n int) {
	t.Helper()
	err := harness.Poll(ctx, 60*time.Second, fmt.Sprintf("%d of %v gone", n, pods), func(ctx context.Context) (bool, error) {
		list, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		alive := map[string]bool{}
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				alive[p.Name] = true
			}
		}
		gone := 0
		for _, p := range pods {
			if !alive[p] {
				gone++
			}
		}
		return gone >= n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
