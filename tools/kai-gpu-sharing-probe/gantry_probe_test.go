// gantry probe (not part of KAI): KAI v0.17's shared-GPU counters on one node, through its own
// NodeInfo. Copied into KAI's pkg/scheduler/api/node_info (it uses that package's test helpers);
// see README.md next to it.
package node_info

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/pod_affinity"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/pod_info"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/pod_status"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/resource_info"
	. "go.uber.org/mock/gomock"
)

type probePod struct {
	task   *pod_info.PodInfo
	shared bool
	amount int // MiB for shared pods (of 100), GPUs for whole ones
	group  int
	onNode bool
}

func probeStatusName(s pod_status.PodStatus) string {
	switch s {
	case pod_status.Releasing:
		return "releasing"
	case pod_status.Pipelined:
		return "pipelined"
	}
	return "running"
}

// The named cases and a random walk over one node's shared and whole-GPU pods, through KAI's own
// NodeInfo.AddTask / RemoveTask / UpdateTask (what Statement.Evict, unevict, Pipeline and
// unpipeline do to the node). Each line: the operation and KAI's idle and releasing GPUs after it.
func TestGantryProbe(t *testing.T) {
	out := os.Getenv("GANTRY_PROBE_OUT")
	seeds := 60
	steps := 40
	var b strings.Builder
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewSource(int64(seed)))
		gpus := 2 + rng.Intn(4)
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node1"},
			Status: v1.NodeStatus{
				Capacity:    common_info.BuildResourceListWithGPU("8000m", "10G", fmt.Sprint(gpus)),
				Allocatable: common_info.BuildResourceListWithGPU("8000m", "10G", fmt.Sprint(gpus)),
			},
		}
		controller := NewController(t)
		aff := pod_affinity.NewMockNodePodAffinityInfo(controller)
		aff.EXPECT().AddPod(Any()).AnyTimes()
		aff.EXPECT().RemovePod(Any()).AnyTimes()
		ni := NewNodeInfo(node, aff, testVectorMapFromNode(node))
		fmt.Fprintf(&b, "node %d %d\n", seed, gpus)
		var pods []*probePod
		emit := func(op string, p *probePod) {
			kind := "whole"
			if p.shared {
				kind = "shared"
			}
			fmt.Fprintf(&b, "%s %d %s %s %d %d %g %g\n", op, indexOf(pods, p), kind,
				probeStatusName(p.task.Status), p.amount, p.group,
				ni.IdleVector.Get(resource_info.GPUIndex), ni.ReleasingVector.Get(resource_info.GPUIndex))
		}
		statuses := []pod_status.PodStatus{pod_status.Running, pod_status.Releasing, pod_status.Pipelined}
		for step := 0; step < steps; step++ {
			r := rng.Intn(10)
			switch {
			case r < 4 || len(pods) == 0: // a new pod
				p := &probePod{shared: rng.Intn(3) != 0}
				var task *pod_info.PodInfo
				name := fmt.Sprintf("p%d", len(pods))
				if p.shared {
					p.amount = 25 * (1 + rng.Intn(3))
					p.group = 1 + rng.Intn(gpus+1)
					task = createPod("ns", name, podCreationOptions{GPUs: float64(p.amount) / 100,
						gpuGroup: fmt.Sprint(p.group)})
				} else {
					p.amount = 1 + rng.Intn(2)
					task = createPod("ns", name, podCreationOptions{GPUs: float64(p.amount)})
				}
				task.Status = statuses[rng.Intn(3)]
				p.task = task
				pods = append(pods, p)
				_ = ni.AddTask(task)
				p.onNode = true
				emit("add", p)
			case r < 6: // a status change: remove with the old status, add with the new one
				p := pods[rng.Intn(len(pods))]
				if !p.onNode {
					continue
				}
				_ = ni.RemoveTask(p.task)
				emit("remove", p)
				p.task.Status = statuses[rng.Intn(3)]
				_ = ni.AddTask(p.task)
				emit("add", p)
			case r < 8: // a pod leaves
				p := pods[rng.Intn(len(pods))]
				if !p.onNode {
					continue
				}
				_ = ni.RemoveTask(p.task)
				p.onNode = false
				emit("remove", p)
			default: // a pod comes back with a new status
				p := pods[rng.Intn(len(pods))]
				if p.onNode {
					continue
				}
				p.task.Status = statuses[rng.Intn(3)]
				_ = ni.AddTask(p.task)
				p.onNode = true
				emit("add", p)
			}
		}
	}
	if out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func indexOf(pods []*probePod, p *probePod) int {
	for i, q := range pods {
		if q == p {
			return i
		}
	}
	return -1
}

func probeNode(t *testing.T, gpus int) *NodeInfo {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node1"},
		Status: v1.NodeStatus{
			Capacity:    common_info.BuildResourceListWithGPU("8000m", "10G", fmt.Sprint(gpus)),
			Allocatable: common_info.BuildResourceListWithGPU("8000m", "10G", fmt.Sprint(gpus)),
		},
	}
	controller := NewController(t)
	aff := pod_affinity.NewMockNodePodAffinityInfo(controller)
	aff.EXPECT().AddPod(Any()).AnyTimes()
	aff.EXPECT().RemovePod(Any()).AnyTimes()
	return NewNodeInfo(node, aff, testVectorMapFromNode(node))
}

func probeCounters(ni *NodeInfo) string {
	return fmt.Sprintf("idle %g releasing %g", ni.IdleVector.Get(resource_info.GPUIndex),
		ni.ReleasingVector.Get(resource_info.GPUIndex))
}

// The four named cases of Gantry's shared_gpu_evict_undo_test.cc, as KAI's Statement does them to
// the node: Evict / unevict = UpdateTask with the new status; Pipeline = AddTask as pipelined;
// unpipeline = RemoveTask.
func TestGantryProbeCases(t *testing.T) {
	{ // evict + rollback with a pipelined whole-GPU pod on the node
		ni := probeNode(t, 4)
		a := createPod("ns", "a-0", podCreationOptions{GPUs: 2})
		a.Status = pod_status.Releasing
		b := createPod("ns", "b-0", podCreationOptions{GPUs: 2})
		b.Status = pod_status.Pipelined
		c := createPod("ns", "c-0", podCreationOptions{GPUs: 0.5, gpuGroup: "g1"})
		c.Status = pod_status.Running
		_ = ni.AddTask(a)
		_ = ni.AddTask(b)
		_ = ni.AddTask(c)
		t.Logf("case evict-drift: before %s", probeCounters(ni))
		c.Status = pod_status.Releasing
		_ = ni.UpdateTask(c)
		t.Logf("case evict-drift: evicted %s", probeCounters(ni))
		c.Status = pod_status.Running
		_ = ni.UpdateTask(c)
		t.Logf("case evict-drift: rolled back %s", probeCounters(ni))
	}
	{ // evict + rollback alone
		ni := probeNode(t, 2)
		c := createPod("ns", "c-0", podCreationOptions{GPUs: 0.5, gpuGroup: "g1"})
		c.Status = pod_status.Running
		_ = ni.AddTask(c)
		t.Logf("case evict-exact: before %s", probeCounters(ni))
		c.Status = pod_status.Releasing
		_ = ni.UpdateTask(c)
		t.Logf("case evict-exact: evicted %s", probeCounters(ni))
		c.Status = pod_status.Running
		_ = ni.UpdateTask(c)
		t.Logf("case evict-exact: rolled back %s", probeCounters(ni))
	}
	{ // pipeline onto a releasing device + undo
		ni := probeNode(t, 2)
		a := createPod("ns", "a-0", podCreationOptions{GPUs: 0.5, gpuGroup: "g1"})
		a.Status = pod_status.Releasing
		_ = ni.AddTask(a)
		t.Logf("case pipeline-drift: before %s", probeCounters(ni))
		b := createPod("ns", "b-0", podCreationOptions{GPUs: 0.5, gpuGroup: "g1"})
		b.Status = pod_status.Pipelined
		_ = ni.AddTask(b)
		t.Logf("case pipeline-drift: pipelined %s", probeCounters(ni))
		_ = ni.RemoveTask(b)
		t.Logf("case pipeline-drift: rolled back %s", probeCounters(ni))
	}
	{ // pipeline onto a new device + undo
		ni := probeNode(t, 2)
		t.Logf("case pipeline-exact: before %s", probeCounters(ni))
		b := createPod("ns", "b-0", podCreationOptions{GPUs: 0.5, gpuGroup: "g9"})
		b.Status = pod_status.Pipelined
		_ = ni.AddTask(b)
		t.Logf("case pipeline-exact: pipelined %s", probeCounters(ni))
		_ = ni.RemoveTask(b)
		t.Logf("case pipeline-exact: rolled back %s", probeCounters(ni))
	}
}
