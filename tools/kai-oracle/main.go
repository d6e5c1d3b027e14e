//go:build kaioracle

// gantry-oracle: scratch tool (not part of KAI). Reads a Gantry/conformance scenario JSON,
// builds a KAI v0.17 session the way KAI's test harness does, runs the actions, and prints
// per-action decisions (pod status/node changes) for comparison with Gantry.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"go.uber.org/mock/gomock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kaiv1 "github.com/kai-scheduler/KAI-scheduler/pkg/apis/kai/v1"
	enginev2 "github.com/kai-scheduler/KAI-scheduler/pkg/apis/scheduling/v2"
	enginev2alpha2 "github.com/kai-scheduler/KAI-scheduler/pkg/apis/scheduling/v2alpha2"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/allocate"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/consolidation"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/preempt"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/reclaim"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/stalegangeviction"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/pod_status"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/queue_info"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/resource_info"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/cache"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/cache/cluster_info"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/conf"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/conf_util"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/framework"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/log"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/test_utils"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/test_utils/jobs_fake"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/test_utils/nodes_fake"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/test_utils/tasks_fake"
)

type qres struct {
	Quota           float64 `json:"quota"`
	Limit           float64 `json:"limit"`
	OverQuotaWeight float64 `json:"over_quota_weight"`
}

type scQueue struct {
	Name                  string  `json:"name"`
	Parent                string  `json:"parent"`
	Priority              *int    `json:"priority"`
	CreationOffsetMinutes float64 `json:"creation_offset_minutes"`
	Resources             *struct {
		GPU    qres `json:"gpu"`
		CPU    qres `json:"cpu"`
		Memory qres `json:"memory"`
	} `json:"resources"`
}

type scTask struct {
	Name        string   `json:"name"`
	State       string   `json:"state"`
	Node        string   `json:"node"`
	CPUMillis   *float64 `json:"cpu_millis"`
	MemoryBytes *float64 `json:"memory_bytes"`
	GPUs        *float64 `json:"gpus"`
	GPUFraction *float64 `json:"gpu_fraction"`
	GPUGroups   []string `json:"gpu_groups"`
	Subgroup    string   `json:"subgroup"`
	TaskPrio    *int     `json:"task_order_priority"`
	NodeAff     *struct {
		LabelKey string   `json:"label_key"`
		Values   []string `json:"values"`
	} `json:"required_node_affinity"`
	GPUMemoryMiB   *float64          `json:"gpu_memory_mib"`
	PodLabels      map[string]string `json:"pod_labels"`
	MigDevices     map[string]int    `json:"mig_devices"`
	ResourceClaims []string          `json:"resource_claims"`
}

type scJob struct {
	Name            string          `json:"name"`
	Namespace       string          `json:"namespace"`
	Queue           string          `json:"queue"`
	Priority        int32           `json:"priority"`
	Preemptibility  string          `json:"preemptibility"`
	AgeMinutes      int             `json:"age_minutes"`
	MinAvailable    *int32          `json:"min_available"`
	SubgroupTree    json.RawMessage `json:"subgroup_tree"`
	StaleForSeconds *float64        `json:"stale_for_seconds"`
	Deleting        bool            `json:"deleting"`
	BestEffort      bool            `json:"best_effort"`
	Tasks           []scTask        `json:"tasks"`
}

type scNode struct {
	Name         string            `json:"name"`
	GPUs         int               `json:"gpus"`
	CPUMillis    float64           `json:"cpu_millis"`
	MemoryBytes  float64           `json:"memory_bytes"`
	GPUMemoryMiB int               `json:"gpu_memory_mib"`
	MaxPods      int               `json:"max_pods"`
	Labels       map[string]string `json:"labels"`
	MigStrategy  string            `json:"mig_strategy"`
}

type plugin struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments"`
}

type expectEntry struct {
	Status string `json:"status"`
	Node   string `json:"node"`
}

type scenario struct {
	Name   string `json:"name"`
	Config struct {
		Mode             string   `json:"mode"`
		Actions          []string `json:"actions"`
		Plugins          []plugin `json:"plugins"`
		RoundsUntilMatch *int     `json:"rounds_until_match"`
		RoundsAfterMatch *int     `json:"rounds_after_match"`
		Session          map[string]interface{} `json:"session"`
	} `json:"config"`
	Nodes  []scNode  `json:"nodes"`
	Queues []scQueue `json:"queues"`
	Jobs   []scJob   `json:"jobs"`
	Expect struct {
		Jobs  map[string]expectEntry `json:"jobs"`
		Tasks map[string]expectEntry `json:"tasks"`
	} `json:"expect"`
}

var statusByName = map[string]pod_status.PodStatus{
	"pending": pod_status.Pending, "gated": pod_status.Gated, "allocated": pod_status.Allocated,
	"pipelined": pod_status.Pipelined, "binding": pod_status.Binding, "bound": pod_status.Bound,
	"running": pod_status.Running, "releasing": pod_status.Releasing, "succeeded": pod_status.Succeeded,
	"failed": pod_status.Failed, "deleted": pod_status.Deleted, "unknown": pod_status.Unknown,
	"stuckinreleasing": pod_status.StuckInReleasing,
}

type reporter struct{}

func (reporter) Errorf(format string, args ...any) { fmt.Fprintf(os.Stderr, "gomock: "+format+"\n", args...) }
func (reporter) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gomock fatal: "+format+"\n", args...)
	os.Exit(3)
}
func (reporter) Helper() {}

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "oracle: "+f+"\n", a...)
	os.Exit(2)
}

// state of the cluster between cycles (the harness's TestJobBasic list)
type world struct {
	sc   *scenario
	jobs []*jobs_fake.TestJobBasic
}

func buildJobs(sc *scenario) []*jobs_fake.TestJobBasic {
	var out []*jobs_fake.TestJobBasic
	for _, j := range sc.Jobs {
		if len(j.SubgroupTree) > 0 && string(j.SubgroupTree) != "null" {
			die("job %s: subgroup_tree not supported", j.Name)
		}
		if len(j.Tasks) == 0 {
			die("job %s: no tasks", j.Name)
		}
		tj := &jobs_fake.TestJobBasic{
			Name: j.Name, Namespace: j.Namespace, QueueName: j.Queue, Priority: j.Priority,
			JobAgeInMinutes: j.AgeMinutes, DeleteJobInTest: j.Deleting, IsBestEffortJob: j.BestEffort,
		}
		if j.AgeMinutes == 0 {
			die("job %s: age 0 not supported", j.Name)
		}
		switch j.Preemptibility {
		case "preemptible":
			tj.Preemptibility = enginev2alpha2.Preemptible
		case "non-preemptible":
			tj.Preemptibility = enginev2alpha2.NonPreemptible
		}
		t0 := j.Tasks[0]
		if t0.GPUFraction != nil {
			die("job %s: fractions not supported", j.Name)
		}
		if t0.GPUs != nil {
			tj.RequiredGPUsPerTask = *t0.GPUs
		}
		if t0.CPUMillis != nil {
			tj.RequiredCPUsPerTask = *t0.CPUMillis / 1000.0
		}
		if t0.MemoryBytes != nil {
			tj.RequiredMemoryPerTask = *t0.MemoryBytes
		}
		if j.StaleForSeconds != nil {
			d := time.Duration(*j.StaleForSeconds * float64(time.Second))
			tj.StaleDuration = &d
		}
		min := int32(len(j.Tasks))
		if j.MinAvailable != nil {
			min = *j.MinAvailable
		}
		tj.RootSubGroupSet = jobs_fake.DefaultSubGroup(min)
		for i, t := range j.Tasks {
			if t.Name != fmt.Sprintf("%s-%d", j.Name, i) {
				die("task name %s is not <job>-<index>", t.Name)
			}
			if t.GPUFraction != nil || t.GPUMemoryMiB != nil || len(t.PodLabels) > 0 || len(t.MigDevices) > 0 || len(t.ResourceClaims) > 0 {
				die("task %s: fractions/gpu memory/pod labels/mig/dra not supported", t.Name)
			}
			if !eqp(t.CPUMillis, t0.CPUMillis) || !eqp(t.MemoryBytes, t0.MemoryBytes) {
				die("task %s: heterogeneous cpu/memory not supported", t.Name)
			}
			st, ok := statusByName[t.State]
			if !ok {
				die("task %s: unknown state %q", t.Name, t.State)
			}
			tt := &tasks_fake.TestTaskBasic{Name: t.Name, State: st, NodeName: t.Node, GPUGroups: t.GPUGroups}
			if !eqp(t.GPUs, t0.GPUs) {
				g := int64(0)
				if t.GPUs != nil {
					g = int64(*t.GPUs)
				}
				tt.RequiredGPUs = &g
			}
			if t.TaskPrio != nil {
				p := *t.TaskPrio
				tt.Priority = &p
			}
			if t.NodeAff != nil {
				if t.NodeAff.LabelKey != tasks_fake.NodeAffinityKey {
					die("task %s: node affinity key %s", t.Name, t.NodeAff.LabelKey)
				}
				tt.NodeAffinityNames = t.NodeAff.Values
			}
			tj.Tasks = append(tj.Tasks, tt)
		}
		out = append(out, tj)
	}
	return out
}

func eqp(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func buildNodes(sc *scenario) map[string]nodes_fake.TestNodeBasic {
	m := map[string]nodes_fake.TestNodeBasic{}
	for _, n := range sc.Nodes {
		if n.MigStrategy != "" {
			die("node %s: mig not supported", n.Name)
		}
		tn := nodes_fake.TestNodeBasic{GPUs: n.GPUs, Labels: n.Labels}
		if n.CPUMillis > 0 {
			tn.CPUMillis = n.CPUMillis / 1000.0
		}
		if n.MemoryBytes > 0 {
			tn.CPUMemory = n.MemoryBytes
		}
		if n.GPUMemoryMiB > 0 && n.GPUMemoryMiB != 100 {
			tn.GPUMemory = n.GPUMemoryMiB
		}
		if n.MaxPods > 0 && n.MaxPods != 110 {
			mp := n.MaxPods
			tn.MaxTaskNum = &mp
		}
		m[n.Name] = tn
	}
	return m
}

func buildQueues(sc *scenario, now time.Time) map[common_info.QueueID]*queue_info.QueueInfo {
	m := map[common_info.QueueID]*queue_info.QueueInfo{}
	for _, q := range sc.Queues {
		qr := enginev2.Queue{
			ObjectMeta: metav1.ObjectMeta{
				Name: q.Name, UID: types.UID(q.Name),
				CreationTimestamp: metav1.Time{Time: now.Add(time.Duration(q.CreationOffsetMinutes * float64(time.Minute)))},
			},
			Spec: enginev2.QueueSpec{DisplayName: q.Name, ParentQueue: q.Parent, Priority: q.Priority},
		}
		if q.Resources != nil {
			r := q.Resources
			qr.Spec.Resources = &enginev2.QueueResources{
				GPU:    enginev2.QueueResource{Quota: r.GPU.Quota, Limit: r.GPU.Limit, OverQuotaWeight: r.GPU.OverQuotaWeight},
				CPU:    enginev2.QueueResource{Quota: r.CPU.Quota, Limit: r.CPU.Limit, OverQuotaWeight: r.CPU.OverQuotaWeight},
				Memory: enginev2.QueueResource{Quota: r.Memory.Quota, Limit: r.Memory.Limit, OverQuotaWeight: r.Memory.OverQuotaWeight},
			}
		}
		qi := queue_info.NewQueueInfo(&qr)
		m[qi.UID] = qi
	}
	cluster_info.UpdateQueueHierarchy(m)
	return m
}

func tiers(sc *scenario) []conf.Tier {
	var opts []conf.PluginOption
	for _, p := range sc.Config.Plugins {
		opts = append(opts, conf.PluginOption{Name: p.Name, Arguments: p.Arguments})
	}
	return []conf.Tier{{Plugins: opts}}
}

func (w *world) buildSession(ctrl *gomock.Controller, budgetHours float64) *framework.Session {
	now := time.Now()
	vectorMap := resource_info.NewResourceVectorMap()
	jobsInfo, tasksToNode, _ := jobs_fake.BuildJobsAndTasksMaps(w.jobs, vectorMap)
	aff := cache.NewK8sClusterPodAffinityInfo()
	nodesInfo := nodes_fake.BuildNodesInfoMap(buildNodes(w.sc), tasksToNode, aff, vectorMap)
	queues := buildQueues(w.sc, now)
	def, err := conf_util.ResolveConfigurationFromFile("")
	if err != nil {
		die("config: %v", err)
	}
	budgets := def.ScenarioSearchBudgets
	if budgetHours > 0 {
		budgets = hugeBudgets(budgets, budgetHours)
	}
	cfg := &test_utils.TestSessionConfig{
		Plugins:               tiers(w.sc),
		CachePlugins:          map[string]bool{"predicates": true},
		ScenarioSearchBudgets: budgets,
	}
	meta := test_utils.TestTopologyBasic{
		Name: w.sc.Name,
		Mocks: &test_utils.TestMock{CacheRequirements: &test_utils.CacheMocking{
			NumberOfCacheBinds: 1 << 30, NumberOfCacheEvictions: 1 << 30, NumberOfPipelineActions: 1 << 30,
		}},
	}
	return test_utils.CreateFakeSession(cfg, nodesInfo, jobsInfo, queues, meta, ctrl, true, nil, aff, vectorMap)
}

type podState struct {
	status pod_status.PodStatus
	node   string
}

func snapshot(ssn *framework.Session) map[string]podState {
	m := map[string]podState{}
	for _, job := range ssn.ClusterInfo.PodGroupInfos {
		for _, t := range job.GetAllPodsMap() {
			m[t.Name] = podState{t.Status, t.NodeName}
		}
	}
	return m
}

// decision form shared with the Gantry side: "pod KIND node" for pods bound/pipelined/evicted
func decisions(initial, cur map[string]podState) []string {
	var out []string
	for name, s := range cur {
		ini := initial[name]
		var kind string
		switch s.status {
		case pod_status.Binding, pod_status.Allocated, pod_status.Bound:
			if ini.status == s.status && ini.node == s.node {
				continue
			}
			kind = "bind"
		case pod_status.Pipelined:
			if ini.status == s.status && ini.node == s.node {
				continue
			}
			kind = "pipelined"
		case pod_status.Releasing:
			if ini.status == pod_status.Releasing {
				continue
			}
			kind = "evict"
		default:
			if s.status != ini.status {
				kind = "status-" + strings.ToLower(s.status.String())
			} else {
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s %s %s", name, kind, s.node))
	}
	sort.Strings(out)
	return out
}

func actionByName(n string) framework.Action {
	switch n {
	case "allocate":
		return allocate.New()
	case "consolidation":
		return consolidation.New()
	case "reclaim":
		return reclaim.New()
	case "preempt":
		return preempt.New()
	case "stalegangeviction":
		return stalegangeviction.New()
	}
	die("unknown action %s", n)
	return nil
}

func (w *world) writeBack(ssn *framework.Session) {
	for _, jm := range w.jobs {
		job := ssn.ClusterInfo.PodGroupInfos[common_info.PodGroupID(jm.Name)]
		for i, tm := range jm.Tasks {
			task := job.GetAllPodsMap()[common_info.PodID(fmt.Sprintf("%s-%d", jm.Name, i))]
			switch task.Status {
			case pod_status.Releasing:
				if jm.DeleteJobInTest {
					tm.NodeName, tm.GPUGroups, tm.State = task.NodeName, task.GPUGroups, pod_status.Releasing
				} else {
					tm.NodeName, tm.State = "", pod_status.Pending
				}
			case pod_status.Pipelined:
				tm.NodeName, tm.State = "", pod_status.Pending
			case pod_status.Binding:
				tm.State, tm.NodeName, tm.GPUGroups = pod_status.Running, task.NodeName, task.GPUGroups
			default:
				tm.State, tm.NodeName, tm.GPUGroups = task.Status, task.NodeName, task.GPUGroups
			}
		}
	}
}

func (w *world) check(ssn *framework.Session) int {
	fails := 0
	for jn, e := range w.sc.Expect.Jobs {
		job, ok := ssn.ClusterInfo.PodGroupInfos[common_info.PodGroupID(jn)]
		if !ok {
			fmt.Printf("CHECK FAIL job %s missing\n", jn)
			fails++
			continue
		}
		for _, t := range job.GetAllPodsMap() {
			if !strings.EqualFold(t.Status.String(), e.Status) || (e.Node != "" && t.NodeName != e.Node) {
				fmt.Printf("CHECK FAIL job %s pod %s: %s@%s, want %s@%s\n", jn, t.Name, t.Status, t.NodeName, e.Status, e.Node)
				fails++
			}
		}
	}
	snap := snapshot(ssn)
	for tn, e := range w.sc.Expect.Tasks {
		s, ok := snap[tn]
		if !ok {
			continue
		}
		if !strings.EqualFold(s.status.String(), e.Status) || (e.Node != "" && s.node != e.Node) {
			fmt.Printf("CHECK FAIL pod %s: %s@%s, want %s@%s\n", tn, s.status, s.node, e.Status, e.Node)
			fails++
		}
	}
	return fails
}

func main() {
	actionsFlag := flag.String("actions", "", "comma-separated actions (default: scenario's)")
	mode := flag.String("mode", "", "single_session (one session, per-action decisions) or multi_round (check expectations)")
	budgetHours := flag.Float64("budget-hours", 0, "victim-search budgets in hours (0: KAI defaults)")
	verbosity := flag.Int("v", -1, "KAI log verbosity (-1: quiet)")
	flag.Parse()
	if flag.NArg() != 1 {
		die("usage: gantry-oracle [flags] scenario.json")
	}
	raw, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		die("%v", err)
	}
	sc := &scenario{}
	if err := json.Unmarshal(raw, sc); err != nil {
		die("parse: %v", err)
	}
	if *verbosity >= 0 {
		_ = log.InitLoggers(*verbosity, false)
	} else {
		_ = log.InitLoggers(0, false)
	}
	test_utils.InitTestingInfrastructure()
	acts := sc.Config.Actions
	if *actionsFlag != "" {
		acts = strings.Split(*actionsFlag, ",")
	}
	m := sc.Config.Mode
	if *mode != "" {
		m = *mode
	}
	ctrl := gomock.NewController(reporter{})
	w := &world{sc: sc, jobs: buildJobs(sc)}

	if m == "multi_round" {
		until, after := 2, 5
		if sc.Config.RoundsUntilMatch != nil {
			until = *sc.Config.RoundsUntilMatch
		}
		if sc.Config.RoundsAfterMatch != nil {
			after = *sc.Config.RoundsAfterMatch
		}
		var ssn *framework.Session
		runCycle := func() {
			ssn = w.buildSession(ctrl, *budgetHours)
			for _, a := range acts {
				actionByName(a).Execute(ssn)
			}
			w.writeBack(ssn)
		}
		for i := 0; i < until; i++ {
			runCycle()
		}
		fails := w.check(w.buildSession(ctrl, *budgetHours))
		for i := 0; i < after; i++ {
			runCycle()
			fails += w.check(ssn)
		}
		if fails == 0 {
			fmt.Println("RESULT PASS")
		} else {
			fmt.Printf("RESULT FAIL %d\n", fails)
		}
		return
	}

	ssn := w.buildSession(ctrl, *budgetHours)
	initial := snapshot(ssn)
	for _, a := range acts {
		start := time.Now()
		actionByName(a).Execute(ssn)
		d := decisions(initial, snapshot(ssn))
		fmt.Printf("== after %s (%d decisions, %.1f ms)\n", a, len(d), float64(time.Since(start).Microseconds())/1000)
		for _, l := range d {
			fmt.Println(l)
		}
	}
	if len(sc.Expect.Jobs)+len(sc.Expect.Tasks) > 0 {
		if fails := w.check(ssn); fails == 0 {
			fmt.Println("RESULT PASS")
		} else {
			fmt.Printf("RESULT FAIL %d\n", fails)
		}
	}
}

func hugeBudgets(b *kaiv1.ScenarioSearchBudgets, hours float64) *kaiv1.ScenarioSearchBudgets {
	d := metav1.Duration{Duration: time.Duration(hours * float64(time.Hour))}
	out := &kaiv1.ScenarioSearchBudgets{
		MaxActionSearchDuration:    map[string]metav1.Duration{"default": d},
		MaxJobSearchDuration:       &d,
		MaxGeneratorSearchDuration: map[string]metav1.Duration{"default": d},
	}
	if b != nil {
		for k := range b.MaxActionSearchDuration {
			out.MaxActionSearchDuration[k] = d
		}
		for k := range b.MaxGeneratorSearchDuration {
			out.MaxGeneratorSearchDuration[k] = d
		}
		out.MinJobSearchDuration = b.MinJobSearchDuration
	}
	return out
}
