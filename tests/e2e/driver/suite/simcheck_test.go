package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"gantry/tests/e2e/driver/harness"
)

// The cross-check of issue 21: a small trace (tests/data/sim/live-crosscheck.yaml: jobs with
// arrival times and durations) is run by `gantry simulate` and played live - the jobs created at
// their arrival times, their pods annotated to run for their duration (the fake kubelet finishes
// them), the scheduler and the binder running as processes. Both must place the same pods on the
// same nodes, cycle by cycle: the pods one simulated cycle placed are the next ones bound live.
//
// Timing: the trace puts arrivals on a 6 s grid and every departure between two of them, so the
// live latencies (a cycle, a bind, the kubelet's second-resolution start time) change no order of
// events. The test checks that spacing on the simulation's own result before playing it, and a live
// arrival waits until the departures the simulation had before it happened live.

// simTrace is the part of a simulation file the live run needs.
type simTrace struct {
	Nodes []struct {
		Name string `json:"name"`
		GPUs int64  `json:"gpus"`
	} `json:"nodes"`
	Jobs []struct {
		Name            string  `json:"name"`
		MinAvailable    int     `json:"min_available"`
		SubmitSeconds   float64 `json:"submit_seconds"`
		DurationSeconds float64 `json:"duration_seconds"`
		Tasks           []struct {
			Name string `json:"name"`
			GPUs int64  `json:"gpus"`
		} `json:"tasks"`
	} `json:"jobs"`
}

// simPlacement is one entry of `gantry simulate --json`'s placements.
type simPlacement struct {
	Cycle int64   `json:"cycle"`
	Time  float64 `json:"time"`
	Job   string  `json:"job"`
	Pod   string  `json:"pod"`
	Node  string  `json:"node"`
}

// minEventGap is the least time the trace leaves between two arrivals or departures (seconds).
const minEventGap = 3

func TestLiveMatchesSimulate(t *testing.T) {
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "tests", "data", "sim", "live-crosscheck.yaml")
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var trace simTrace
	if err := yaml.Unmarshal(text, &trace); err != nil {
		t.Fatalf("%s: %v", file, err)
	}

	// The simulation.
	out, err := exec.Command(bin, "simulate", file, "--json").Output()
	if err != nil {
		t.Fatalf("gantry simulate %s: %v", file, err)
	}
	var sim struct {
		Placements []simPlacement  `json:"placements"`
		Evictions  map[string]int  `json:"evictions_by_action"`
		Cycles     int64           `json:"cycles"`
		Queues     json.RawMessage `json:"queues"`
	}
	if err := json.Unmarshal(out, &sim); err != nil {
		t.Fatalf("gantry simulate --json: %v", err)
	}
	pods := 0
	for _, j := range trace.Jobs {
		pods += len(j.Tasks)
	}
	if len(sim.Placements) != pods || len(sim.Evictions) != 0 {
		t.Fatalf("the simulation placed %d of %d pods with evictions %v; the trace must place every pod once",
			len(sim.Placements), pods, sim.Evictions)
	}
	// Events: arrivals, and departures (a job's first placement plus its duration: a job's pods
	// are placed in one cycle).
	started := map[string]float64{}
	for _, p := range sim.Placements {
		if _, ok := started[p.Job]; !ok {
			started[p.Job] = p.Time
		}
	}
	type event struct {
		t         float64
		job       string
		departure bool
	}
	var events []event
	departs := map[string]float64{}
	for _, j := range trace.Jobs {
		events = append(events, event{j.SubmitSeconds, j.Name, false})
		departs[j.Name] = started[j.Name] + j.DurationSeconds
		events = append(events, event{departs[j.Name], j.Name, true})
	}
	sort.SliceStable(events, func(a, b int) bool { return events[a].t < events[b].t })
	// What happens after the last placement decides nothing.
	last := sim.Placements[len(sim.Placements)-1].Time
	podsOf := map[string]int{}
	for _, j := range trace.Jobs {
		podsOf[j.Name] = len(j.Tasks)
	}
	for i, e := range events {
		if e.t > last+minEventGap {
			break
		}
		if i > 0 && e.t-events[i-1].t < minEventGap {
			t.Fatalf("trace too tight for a live run: %+v and %+v are less than %d s apart", events[i-1], e, minEventGap)
		}
		// Live, a gang's pods finish one by one (each after its own start, in whole seconds); a
		// cycle between them would see part of the gang's GPUs free.
		if e.departure && podsOf[e.job] > 1 {
			t.Fatalf("trace unfit for a live run: gang %s leaves at %.0f s, before the last placement (%.0f s)", e.job, e.t, last)
		}
	}
	t.Logf("simulation: %d pods placed in %d cycles (of %d run)", pods, countCycles(sim.Placements), sim.Cycles)

	// The live run.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	id := suffix()
	live := func(node string) string { return "xc-" + id + "-" + node }
	var nodes []harness.GPUNode
	for _, n := range trace.Nodes {
		nodes = append(nodes, harness.GPUNode{Name: live(n.Name), GPUs: n.GPUs})
	}
	exclusiveNodes(t, ctx, nodes...)
	ns := newNamespace(t, ctx, "xcheck")
	cleanupPods(t, ns)
	rec := newRecorder(t, ctx, admin.Kube, ns)
	queue := "train-" + id
	createQueue(t, ctx, queue, 0)
	scheduler := startScheduler(t)
	liveBinder(t, "binder-xcheck.log")

	// finished says which of the jobs' pods all completed (Succeeded).
	finished := func(ctx context.Context) (map[string]bool, error) {
		l, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		left := map[string]int{}
		for _, j := range trace.Jobs {
			left[j.Name] = len(j.Tasks)
		}
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodSucceeded {
				left[p.Annotations["pod-group-name"]]--
			}
		}
		done := map[string]bool{}
		for j, n := range left {
			done[j] = n == 0
		}
		return done, nil
	}
	var all []string
	start := time.Now()
	for _, j := range trace.Jobs {
		if wait := time.Until(start.Add(time.Duration(j.SubmitSeconds * float64(time.Second)))); wait > 0 {
			time.Sleep(wait)
		}
		// The departures the simulation had before this arrival happened live, and none after it.
		var before []string
		early := ""
		err := harness.Poll(ctx, 30*time.Second, "departures before "+j.Name, func(ctx context.Context) (bool, error) {
			done, err := finished(ctx)
			if err != nil {
				return false, err
			}
			before = before[:0]
			for _, o := range trace.Jobs {
				if departs[o.Name] < j.SubmitSeconds && !done[o.Name] {
					before = append(before, o.Name)
				}
				if departs[o.Name] > j.SubmitSeconds && done[o.Name] {
					early = fmt.Sprintf("job %s finished live before %s arrived; the simulation has it after (at %.0f s, arrival at %.0f s)",
						o.Name, j.Name, departs[o.Name], j.SubmitSeconds)
				}
			}
			return early != "" || len(before) == 0, nil
		})
		if err != nil {
			t.Fatalf("%v (waiting for %v)", err, before)
		}
		if early != "" {
			t.Fatal(early)
		}
		if late := time.Since(start).Seconds() - j.SubmitSeconds; late > 1 {
			t.Logf("%s arrives %.1f s late", j.Name, late)
		}
		createPodGroup(t, ctx, ns, j.Name, queue, j.MinAvailable)
		for _, task := range j.Tasks {
			pod := pendingPod(task.Name, task.GPUs)
			pod.Labels["kai.scheduler/queue"] = queue
			pod.Annotations = map[string]string{"pod-group-name": j.Name,
				harness.RunForAnnotation: fmt.Sprintf("%.0fs", j.DurationSeconds)}
			if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create pod %s: %v", pod.Name, err)
			}
			all = append(all, task.Name)
		}
	}
	err = harness.Poll(ctx, 2*time.Minute, "every pod bound", func(context.Context) (bool, error) {
		return rec.boundCount() >= len(all), nil
	})
	if err != nil {
		t.Errorf("%v: %d of %d bound", err, rec.boundCount(), len(all))
	}
	t.Logf("live: all %d pods bound %s after the first arrival", rec.boundCount(), time.Since(start).Round(time.Millisecond))

	// Live: pods in the order they were first seen bound (one node each, never deleted, one
	// BindRequest each: every pod was decided once).
	rec.mu.Lock()
	var liveSeq []simPlacement
	for _, c := range rec.changes {
		if !c.deleted {
			liveSeq = append(liveSeq, simPlacement{Pod: c.pod, Node: strings.TrimPrefix(c.node, live(""))})
		}
	}
	rec.mu.Unlock()
	rec.mu.Lock()
	for _, p := range all {
		if nodes := rec.podNodes[p]; len(nodes) != 1 || rec.podGone[p] {
			t.Errorf("pod %s: node names seen %v, deleted %v; want one node, not deleted", p, nodes, rec.podGone[p])
		}
	}
	rec.mu.Unlock()
	// The binder marks a BindRequest Succeeded after it bound the pod.
	harness.Poll(ctx, 30*time.Second, "every BindRequest Succeeded", func(context.Context) (bool, error) {
		for _, p := range all {
			if hs := rec.requestsFor(p); len(hs) != 1 || !hs[0].reached("Succeeded") {
				return false, nil
			}
		}
		return true, nil
	})
	for _, p := range all {
		if hs := rec.requestsFor(p); len(hs) != 1 || !hs[0].reached("Succeeded") {
			t.Errorf("pod %s: %d BindRequests, want 1 that succeeded (every pod decided once)", p, len(hs))
		}
	}
	// The scheduler logs each cycle that decided something with its number of binds: the same
	// sequence as the simulation's placing cycles.
	var liveCycles, simCycles []int
	for _, line := range strings.Split(scheduler.output(), "\n") {
		var gen, pods, jobs, binds, evictions int
		if n, _ := fmt.Sscanf(line, "cycle %d: %d pods, %d jobs: %d binds, %d evictions", &gen, &pods, &jobs, &binds, &evictions); n == 5 {
			liveCycles = append(liveCycles, binds)
			if evictions > 0 {
				t.Errorf("live: %s", line)
			}
		}
	}
	for i := range sim.Placements {
		if i == 0 || sim.Placements[i].Cycle != sim.Placements[i-1].Cycle {
			simCycles = append(simCycles, 0)
		}
		simCycles[len(simCycles)-1]++
	}
	t.Logf("binds per deciding cycle, live: %v", liveCycles)
	if fmt.Sprint(liveCycles) != fmt.Sprint(simCycles) {
		t.Errorf("binds per deciding cycle: live %v, simulation %v", liveCycles, simCycles)
	}
	// The same pods on the same nodes, cycle by cycle: the pods of the simulation's k-th placing
	// cycle are the next ones bound live (in any order among themselves).
	if msg := compareCycles(sim.Placements, liveSeq); msg != "" {
		var b strings.Builder
		fmt.Fprintf(&b, "%s\nsimulation (cycle, time, pod, node):\n", msg)
		for _, p := range sim.Placements {
			fmt.Fprintf(&b, "  %3d %6.1f %s %s\n", p.Cycle, p.Time, p.Pod, p.Node)
		}
		b.WriteString("live (order bound, pod, node):\n")
		for i, p := range liveSeq {
			fmt.Fprintf(&b, "  %3d %s %s\n", i, p.Pod, p.Node)
		}
		t.Error(b.String())
	}
	// Each pod's BindRequest named the node it went to.
	rec.mu.Lock()
	for _, p := range all {
		for _, h := range rec.brs {
			if h.pod == p && (len(rec.podNodes[p]) != 1 || h.node != rec.podNodes[p][0]) {
				t.Errorf("pod %s: BindRequest for node %s, bound to %v", p, h.node, rec.podNodes[p])
			}
		}
	}
	rec.mu.Unlock()
}

func countCycles(ps []simPlacement) int {
	n := 0
	for i := range ps {
		if i == 0 || ps[i].Cycle != ps[i-1].Cycle {
			n++
		}
	}
	return n
}

// compareCycles checks that live (pods in the order bound) is sim (pods by cycle) with each
// cycle's pods in some order, every pod on the same node; "" when it is.
func compareCycles(sim, live []simPlacement) string {
	if len(live) != len(sim) {
		return fmt.Sprintf("%d pods placed by the simulation, %d bound live", len(sim), len(live))
	}
	for i := 0; i < len(sim); {
		k := i
		want := map[string]string{}
		for ; k < len(sim) && sim[k].Cycle == sim[i].Cycle; k++ {
			want[sim[k].Pod] = sim[k].Node
		}
		for _, p := range live[i:k] {
			node, ok := want[p.Pod]
			if !ok {
				return fmt.Sprintf("live binding %d: %s, not one of the pods of the simulation's cycle %d", i, p.Pod, sim[i].Cycle)
			}
			if node != p.Node {
				return fmt.Sprintf("pod %s: node %s live, %s in the simulation", p.Pod, p.Node, node)
			}
		}
		i = k
	}
	return ""
}
